"""A second set of hard conversations (issue 30), written from the brief alone, apart from
``bench/hardconv.py``: the tuning choices made on ``hard-*`` can be checked on questions nobody tuned on.

    .venv/bin/python bench/hard2conv.py --seed 0     # writes bench/data/hard2-en.json and hard2-zh.json

Each conversation is two people chatting over 8-12 dated sessions of 12-20 turns, mostly small talk.
Scattered in it: people introduced by what they did for a speaker ("lent me the van"), what became of
them later (a job, a city, a pet, a pastime), who they are related to, the speakers' habits and
preferences, and changes in their lives (a new job, a move, a new car, a new pastime). Questions:

* ``multi-hop``: a person described by a deed in one session, named with an attribute in another; the
  question paraphrases the deed and shares no content unit (``content_units``) with either turn.
* ``multi-hop-3``: the same with a relative or colleague of that person in between (three sessions).
* ``inference``: "Would X enjoy ...?", "What might X bring ...?": answered by a habit stated twice,
  in other words, in two sessions; no content unit shared with the question either.
* ``temporal-change``: "What did X do before ...?": evidence the before turn and the later after turn.

Hard negatives: decoy turns written with the question's own words that do not answer it, and other
people with attributes of the same kind. Every conversation is a tuning one (``"tuning": true``):
the set is for judging tuning choices, never a held-out number.

The generator checks its own claims while it writes (no shared content unit; evidence in distinct
sessions) and raises ``PhrasingClash`` naming the item when a phrasing breaks them, so a new template
cannot quietly weaken the set.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
from datetime import date, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data"
CONVERSATIONS = 10
MULTI_HOP, MULTI_HOP_3, INFERENCE, CHANGES = 5, 2, 4, 3


class PhrasingClash(ValueError):
    """A question shares a content unit with its evidence for every phrasing the tables offer."""


# -- content units: what "sharing a word" means ---------------------------------------------------
EN_STOP = frozenset("""
a about above after again all also am an and any are as at be been before being but by can could
did do does doing don't for from get gets got had has have having he her here him his how i i'm if
in into is it it's its just me might my no not now of off on once one only or our out over own s
so some still such than that the their them then there these they this those to too up very was
we were what when where which while who whoever why will with would you your yours t ll ve re d m
""".split())  # noqa: SIM905 (a word list reads best as words)
# Chinese is compared character by character (a stricter test than words): these are the function
# characters and pronouns every sentence has, which carry no content.
ZH_STOP = frozenset("的了是我你他她它们在有和也都就还这那个一不没吗呢吧啊呀么什怎谁哪里会要想说过去来到给把被让对跟从"
                    "上下中多少好很太又再才已经得地着啦哈嘛呗哦嗯咱自己些点儿种样候时次之以为与而且或及所其人现位"
                    "，。？！、：；“”‘’（）…")
_SUFFIXES = ("ings", "ing", "ed", "es", "s", "ly", "er")


def stem(word: str) -> str:
    """A crude English stem: the checks compare stems so "repaired" and "repair", "bikes" and "bike",
    "living" and "lives" count as one word (cruder means stricter: more words clash)."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def content_units(text: str, lang: str) -> set[str]:
    """The units two texts must not share to count as sharing no content word: English stems of
    non-stop words; Chinese non-function characters (and stems of any Latin words in them)."""
    lowered = text.lower()
    units = {stem(w) for w in re.findall(r"[a-z]+", lowered) if w not in EN_STOP}
    if lang == "zh":
        units |= {c for c in lowered if "\u3400" <= c <= "\u9fff" and c not in ZH_STOP}
    return units


def shares_content(question: str, evidence: list[str], lang: str) -> bool:
    asked = content_units(question, lang)
    return any(asked & content_units(text, lang) for text in evidence)


# -- phrase tables ---------------------------------------------------------------------------------
# A statement is (who, text): "self" is said by the person it is about, in the first person;
# "other" by the partner, in the second person. {x} the described person, {y} the relative,
# {v} the value, {z} an unrelated person, {old}/{new} the two sides of a change.
EN = {
    "names": ["Ana", "Bruno", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Katya",
              "Luis", "Noor", "Oskar", "Priya", "Rafael", "Sofia", "Theo", "Ulla", "Vikram", "Wren", "Yusuf"],
    "people": ["Agnes", "Bilal", "Cormac", "Dagny", "Emeka", "Fenna", "Gideon", "Hana", "Ilse", "Joaquin",
               "Kasimir", "Lorna", "Magnus", "Nadia", "Odile", "Piet", "Quentin", "Rosalind", "Soren", "Tamsin",
               "Ugo", "Vesna", "Wilhelmina", "Xavier", "Yara", "Zbigniew"],
    "roles": {
        "van": {"says": [("self", "{x} let me borrow the van for the whole weekend, saved me a fortune."),
                         ("other", "Good thing {x} handed you the van keys that weekend.")],
                "desc": ["the person who loaned {s} a vehicle", "whoever provided {s} with transport"],
                "decoys": ["The garage loaned me a courtesy vehicle while mine was in for repairs.",
                           "Public transport here is provided by three companies that hate each other."]},
        "plants": {"says": [("self", "{x} kept my ferns alive the whole time I was in Lisbon."),
                            ("other", "{x} was watering your balcony pots every evening while you were away, right?")],
                   "desc": ["the one who looked after {s}'s greenery during the trip abroad",
                            "whoever tended {s}'s houseplants on that holiday"],
                   "decoys": ["My greenery is dying, I'm hopeless with anything that needs tending.",
                              "The trip abroad cost twice what we planned."]},
        "laptop": {"says": [("self", "I knocked tea all over my laptop and {x} got it working again overnight."),
                            ("other", "Is the laptop still alive after {x} took it apart?")],
                   "desc": ["the person who revived {s}'s computer after the spill",
                            "whoever repaired {s}'s machine after a drink accident"],
                   "decoys": ["The office computer crashed after an update and nobody could revive it.",
                              "Someone had a spill in aisle four and the whole supermarket smelled of vinegar."]},
        "cake": {"says": [("self", "{x} made the cake for my thirtieth, three layers of chocolate."),
                          ("other", "That chocolate cake {x} baked for your thirtieth was unreal.")],
                 "desc": ["whoever produced the dessert at {s}'s birthday party",
                          "the person responsible for the sweets when {s} turned 30"],
                 "decoys": ["The birthday party next door went on until three in the morning.",
                            "I'm off dessert for a month, doctor's orders."]},
        "climbing": {"says": [("self", "It was {x} who first dragged me to the bouldering hall."),
                              ("other", "You only started bouldering because {x} kept nagging you.")],
                     "desc": ["the friend who got {s} into scaling rock walls",
                              "whoever introduced {s} to climbing"],
                     "decoys": ["Scaling those rock walls at the coast looks terrifying to me.",
                                "My friend got into climbing and now talks about nothing else."]},
        "tutor": {"says": [("self", "{x} got me through statistics in second year, I'd have failed otherwise."),
                           ("other", "Didn't {x} tutor you through stats back at uni?")],
                  "desc": ["the person who coached {s} in probability at college",
                           "whoever helped {s} pass a maths course as a student"],
                  "decoys": ["The bank coached us through the numbers for the mortgage, probability of approval nil.",
                             "My nephew's college lost his application twice."]},
        "hospital": {"says": [("self", "When I broke my wrist, {x} sat with me in A&E until four in the morning."),
                              ("other", "{x} stayed by your side in casualty the night of the wrist thing.")],
                     "desc": ["whoever kept {s} company at the emergency ward after the fracture",
                              "the person who waited with {s} at hospital after that injury"],
                     "decoys": ["The emergency ward at St Anne's closes at night now.",
                                "My grandad had a hip fracture in March and he's walking again."]},
        "letters": {"says": [("self", "{x} translated all of grandma's letters from Polish for me."),
                             ("other", "Did {x} finish putting your grandmother's Polish letters into English?")],
                    "desc": ["the one who rendered {s}'s gran's old correspondence readable",
                             "whoever decoded the family's handwritten notes for {s}"],
                    "decoys": ["My old correspondence is stuck in a shoebox in the attic.",
                               "The handwritten notes on the fridge are from the landlord, as usual."]},
        "tailor": {"says": [("self", "{x} took up the hem on my suit trousers an hour before the gala."),
                            ("other", "{x} rescued your suit with a needle and thread, didn't they?")],
                   "desc": ["the person who altered {s}'s outfit for the formal evening",
                            "whoever fixed {s}'s clothes before the black-tie dinner"],
                   "decoys": ["Formal evenings at work are a nightmare, I never know what outfit to wear.",
                              "The dry cleaner altered my coat and made it worse."]},
        "taxes": {"says": [("self", "{x} sorted my tax return in April, I'd have missed the deadline."),
                           ("other", "Was it {x} who did your tax forms again this year?")],
                  "desc": ["whoever handled {s}'s paperwork for the revenue office",
                           "the person who dealt with {s}'s finances for the government"],
                  "decoys": ["The paperwork for the passport renewal took ages.",
                             "Whoever designed the revenue office website should be ashamed."]},
        "tent": {"says": [("self", "{x} lent me a tent and two sleeping bags for the festival."),
                          ("other", "Did you ever give {x} that tent back from the festival?")],
                 "desc": ["the person who supplied {s} with camping gear",
                          "whoever equipped {s} to sleep outdoors"],
                 "decoys": ["The camping gear shop on Mill Road is closing down.",
                            "We slept outdoors on the terrace because the flat was an oven."]},
        "battery": {"says": [("self", "My battery died in the car park and {x} came out at midnight with jump leads."),
                             ("other", "Lucky {x} turned up with cables when your car wouldn't start that night.")],
                    "desc": ["the one who rescued {s} when the motor refused to turn over",
                             "whoever helped {s} with a dead engine late one evening"],
                    "decoys": ["The motor on the washing machine refused to turn over this morning.",
                               "The engine noise from the motorway keeps me up late every evening."]},
        "referral": {"says": [("self", "The job I have now only happened because {x} passed my CV along."),
                              ("other", "Wasn't it {x} who recommended you to your current boss?")],
                     "desc": ["whoever put {s} forward for the present position",
                              "the person who vouched for {s} with an employer"],
                     "decoys": ["My present position on the waiting list is forty-second.",
                                "An employer put forward a new rota that nobody likes."]},
        "swim": {"says": [("self", "I only learned to swim because {x} spent a summer with me at the lake."),
                          ("other", "You said {x} taught you to swim when you were nine, didn't you?")],
                 "desc": ["the person who got {s} paddling as a child",
                          "whoever made {s} at home in water as a kid"],
                 "decoys": ["Paddling in the sea as a child I got stung by a jellyfish.",
                            "The kid next door is in the water all summer."]},
    },
    "attrs": {
        "job": {"values": ["pharmacist", "paramedic", "carpenter", "sound engineer", "florist", "midwife",
                           "beekeeper", "actuary", "diving instructor", "geologist", "veterinary nurse", "locksmith"],
                "says": ["{x} got hired as {va} last month.", "{x} has been working as {va} since the spring.",
                         "{x} retrained as {va}, finally happy at work."],
                "ask": ["What does {d} do for a living?", "What is the occupation of {d}?"],
                "decoys": ["Nobody can earn a living as a musician round here anymore.",
                           "The occupation forms at the bank asked for my grandfather's trade, weirdly."]},
        "city": {"values": ["Porto", "Tallinn", "Leeds", "Valencia", "Halifax", "Dundee", "Krakow", "Bergen",
                            "Ghent", "Perth", "Trieste", "Bilbao"],
                 "says": ["{x} packed up and relocated to {v} in March.",
                          "{x} is settled in {v}, in a flat near the harbour.",
                          "Heard from {x}, the new place in {v} has a tiny garden."],
                 "ask": ["Which city does {d} live in these days?", "In which town is {d} based at the moment?"],
                 "decoys": ["Which city has the cheapest rent these days, do you think?",
                            "My cousin is based in a town with no trains at the moment."]},
        "pet": {"values": ["tortoise", "parrot", "rabbit", "hedgehog", "greyhound", "axolotl", "chinchilla",
                           "gecko", "cockatiel", "guinea pig"],
                "says": ["{x} has {va} now, named after a footballer.", "{x}'s new {v} chewed through a phone charger.",
                         "{x} adopted {va} from the rescue centre."],
                "ask": ["What animal does {d} keep?", "Which creature lives with {d}?"],
                "decoys": ["My landlord says no animal of any kind, not even a fish.",
                           "Some creature lives in our loft and scratches all night."]},
        "hobby": {"values": ["fencing", "rowing", "salsa", "archery", "woodturning", "birdwatching", "chess",
                             "kite-surfing", "juggling", "orienteering"],
                  "says": ["{x} joined the local {v} club and goes three times a week.",
                           "{x} is obsessed with {v} at the moment.",
                           "{x} spends every free Sunday on {v}."],
                  "ask": ["What pastime has {d} taken up?", "What does {d} do for fun lately?"],
                  "decoys": ["I need a pastime that isn't staring at a screen.",
                             "The kids had fun lately at the trampoline park."]},
    },
    "relations": {
        "sibling": {"says": ["{x}'s younger brother {y} is staying with them for a bit.",
                             "Turns out {y} is {x}'s sister, small world."],
                    "desc": "the sibling of {d}"},
        "spouse": {"says": ["{x}'s husband {y} cooked for us on Friday.", "{x} got engaged to {y} over Easter."],
                   "desc": "the spouse of {d}"},
        "colleague": {"says": ["{y} works in the same office as {x}, two desks apart.",
                               "{x} and {y} run the night shift together."],
                      "desc": "the coworker of {d}"},
    },
    "traits": {
        "vegetarian": {"says": [("self", "I haven't touched meat in six years and don't miss it."),
                                ("self", "Lentil stew again tonight, the butcher has probably forgotten my face."),
                                ("other", "You still won't eat anything that had a face, right?")],
                       "ask": [("Would {s} order the steak at the new grill house?", "no: vegetarian")],
                       "decoys": ["The new grill house by the station does half-price steak on Tuesdays."]},
        "early": {"says": [("self", "I'm up at five every day, weekends included."),
                           ("self", "By half nine I'm yawning, I can't do late nights."),
                           ("other", "You're always the first one awake, it's unnatural.")],
                  "ask": [("Would {s} enjoy a concert that starts at midnight?", "unlikely: goes to bed early")],
                  "decoys": ["The concert on Friday starts at eight, doors open at seven."]},
        "seasick": {"says": [("self", "Every ferry crossing I spend green at the rail."),
                             ("self", "Even a pedal boat on the pond turns my stomach."),
                             ("other", "You went grey on that harbour trip, I've never seen anyone so ill.")],
                    "ask": [("Would {s} enjoy a whale-watching cruise?", "no: gets seasick")],
                    "decoys": ["The whale-watching cruise got cancelled because of the wind."]},
        "dairy": {"says": [("self", "Milk and cheese leave me doubled over for hours."),
                           ("self", "I have to check every label for lactose now."),
                           ("other", "I got you oat milk, I remember what cream does to you.")],
                  "ask": [("Would {s} enjoy a fondue evening?", "no: lactose intolerant")],
                  "decoys": ["We're hosting a fondue evening for the neighbours' leaving do."]},
        "crowds": {"says": [("self", "Packed rooms drain me, I always end up hiding in the kitchen."),
                            ("self", "I'd rather have two friends over than go to a big party."),
                            ("other", "You left the pub quiz early again, was it the crush at the bar?")],
                   "ask": [("Would {s} like a three-day music festival?", "no: dislikes crowds")],
                   "decoys": ["Tickets for the music festival sold out in an hour."]},
        "reader": {"says": [("self", "I get through three novels a month on the train."),
                            ("self", "The librarians know me by name now."),
                            ("other", "You've always got a paperback in your coat pocket.")],
                   "ask": [("What might {s} pack for a long flight?", "a book to read")],
                   "decoys": ["Long flight to Sydney next month, I'm dreading it."]},
        "gardener": {"says": [("self", "The tomatoes finally came in, I've got more than I can eat."),
                              ("self", "I'm at the allotment every evening, weeding and watering."),
                              ("other", "Your courgettes are taking over the whole plot.")],
                     "ask": [("What might {s} bring to a summer barbecue?", "homegrown vegetables")],
                     "decoys": ["Bring a chair to the barbecue, we only have four."]},
        "teetotal": {"says": [("self", "I haven't had a drink since I quit in 2019."),
                              ("self", "Sparkling water with lime for me, always."),
                              ("other", "You're the designated driver again, as ever, you never touch the stuff.")],
                     "ask": [("Would {s} enjoy a wine-tasting tour?", "no: doesn't drink alcohol")],
                     "decoys": ["The wine-tasting tour was mostly standing in a cold cellar."]},
        "cold": {"says": [("self", "Anything under ten degrees and I'm miserable."),
                          ("self", "I wear two jumpers indoors from October."),
                          ("other", "You had the heater on in May, I saw it.")],
                 "ask": [("Would {s} enjoy a skiing holiday?", "no: hates the cold")],
                 "decoys": ["Skiing holidays cost a fortune once you add the lift pass."]},
        "coffee": {"says": [("self", "I grind my own beans every morning, the supermarket stuff is undrinkable."),
                            ("self", "Found a roaster doing a Kenyan single origin, I'm in love."),
                            ("other", "You and your pour-over kettle, honestly.")],
                   "ask": [("What gift would {s} appreciate?", "good coffee")],
                   "decoys": ["I never know what gift to get my dad, he says he appreciates socks."]},
        "nolicence": {"says": [("self", "I never got round to a licence, I failed the test twice."),
                               ("self", "Bus pass, bike or walking, those are my options."),
                               ("other", "You still make everyone else do the driving.")],
                      "ask": [("Could {s} give someone a ride to the airport at dawn?", "no: can't drive")],
                      "decoys": ["The airport shuttle at dawn was packed."]},
        "dogs": {"says": [("self", "Big dogs terrify me since one bit me as a kid."),
                          ("self", "I crossed the road again because of that Alsatian on Elm Street."),
                          ("other", "You froze when the neighbour's Labrador came bounding over.")],
                 "ask": [("Would {s} be comfortable house-sitting for a family with two huskies?",
                          "no: afraid of dogs")],
                 "decoys": ["A family with two huskies just moved in opposite us."]},
        "games": {"says": [("self", "Friday is Catan night, six of us around the kitchen table."),
                           ("self", "I just bought another expansion for Ticket to Ride."),
                           ("other", "Your shelf of boxes with dice in them is getting out of hand.")],
                  "ask": [("What might {s} suggest for a rainy evening in?", "a board game")],
                  "decoys": ["Rainy evenings are the worst for my knee."]},
        "spicy": {"says": [("self", "I put chilli flakes on everything, even eggs."),
                           ("self", "The hotter the sauce the better, mild is a waste."),
                           ("other", "You ordered the hottest curry on the menu again, I watched you sweat.")],
                  "ask": [("What might {s} add to a bland soup?", "chilli or hot sauce")],
                  "decoys": ["The soup at the canteen is bland but cheap."]},
    },
    "changes": {
        "job": {"values": (["bank teller", "line cook", "postal worker", "primary teacher", "call-centre agent",
                            "estate agent", "barista"],
                           ["nurse", "electrician", "park ranger", "software tester", "driving instructor",
                            "dental hygienist"]),
                "before": ["Eight years as {old_a} and the hours haven't got any kinder.",
                           "Still {old_a}, still counting the days to Friday."],
                "after": ["Handed in my notice, I'm training as {new_a} now.",
                          "First month as {new_a}, and I don't miss my old job one bit."],
                "ask": ["What did {s} do for work before becoming {new_a}?",
                        "What was {s}'s job before retraining as {new_a}?"],
                "decoys": ["My cousin is training to become {new_a}, the course takes two years."]},
        "home": {"values": (["Manchester", "Lyon", "Rotterdam", "Cork", "Aarhus", "Graz"],
                            ["Edinburgh", "Seville", "Utrecht", "Galway", "Malmo", "Salzburg"]),
                 "before": ["Our flat in {old} still has no working heating.",
                            "Rent in {old} went up again, it's absurd."],
                 "after": ["Finally unpacked in {new}, the removal van was a nightmare.",
                           "We've been in {new} a month and I still get lost."],
                 "ask": ["Where did {s} live before moving to {new}?", "Which city was {s}'s home before {new}?"],
                 "decoys": ["My aunt keeps saying {new} is lovely in spring."]},
        "pastime": {"values": (["choir", "the chess club", "amateur dramatics", "five-a-side football"],
                               ["pottery", "open-water swimming", "life drawing", "sea kayaking"]),
                    "before": ["Can't do Thursday, I've got {old}.",
                               "{old} went well last night, we're getting better."],
                    "after": ["Signed up for {new} on Thursdays instead of my old thing.",
                              "{new} is my new obsession, I dropped everything else."],
                    "ask": ["What did {s} do in free time before getting into {new}?"],
                    "decoys": ["A friend tried {new} once and gave up after a week."]},
        "car": {"values": (["old Fiat Panda", "Volvo estate", "battered Corsa", "Mini"],
                           ["Skoda Enyaq", "Toyota Prius", "Kia e-Niro", "Renault Zoe"]),
                "before": ["My {old} failed its inspection again.", "The {old} won't start when it's cold."],
                "after": ["Picked up the {new} on Saturday, it still smells new.",
                          "The {new} is so quiet I keep checking it's on."],
                "ask": ["What did {s} drive before getting the {new}?"],
                "decoys": ["The neighbour's {new} blocks the drive every morning."]},
    },
    "openers": ["Morning! How's your week been?", "Hey, you around?", "Happy Friday!", "Long time no chat!",
                "Hi! Got a minute?", "Evening! Survived the day?"],
    "closers": ["Talk soon!", "Got to run, speak later.", "Anyway, I'd better get dinner on.", "Night night!",
                "Right, back to work. Bye!", "Catch you at the weekend."],
    "fillers": [
        "Honestly, same as always.", "Did you catch the storm on Tuesday?",
        "The bins didn't get collected again.", "I finally fixed the squeaky door.", "Ha, typical.",
        "That's a relief.", "No way, really?", "I made soup for the whole week.", "We should do lunch soon.",
        "My phone keeps dying by three in the afternoon.", "The train was cancelled, so I worked from home.",
        "Have you seen the new series everyone's on about?", "I fell asleep in the first episode.",
        "Sounds about right.", "Fingers crossed.", "Anyway, enough about me.", "How's the family?",
        "All good here, just tired.", "The neighbours had a party until two.", "I bought far too many lemons.",
        "It's been raining for eleven days straight.", "We repainted the hallway a sort of grey.",
        "I keep meaning to call my aunt.", "The queue at the post office was out the door.",
        "Got a parking ticket, ten minutes over.", "That sounds exhausting.", "Oh, I'd love that.",
        "I'm trying to go to bed before midnight, failing.", "The heating bill was horrific.",
        "Did you end up going to that thing?", "Not really, something came up.",
        "I can't believe it's almost the end of the month.",
        "My knee has been clicking on the stairs.", "The bakery on the corner closed.", "Let me know how it goes.",
        "I'll send you the link.", "That podcast was better than I expected.", "Work's fine, a bit slow.",
        "I've been sorting old photos, so many haircuts.", "The cat from next door sleeps on our shed.",
        "That made me laugh.", "Same here.",
        "We had a power cut for an hour.", "I finally returned those library books, with a fine.",
        "The market had strawberries already.", "I need a holiday from my holiday.",
        "My sister sends her love.", "The printer at work ate my report.", "I'm knitting a scarf, badly.",
        "Not much news, really.", "We tried the Vietnamese place, very good.", "Be careful on the ice.",
        "The clocks go back this weekend.", "I lost my umbrella again.", "Did you sleep at all?",
    ],
}

ZH = {
    "names": ["闵芮", "许朗", "唐沁", "蒋帆", "邵宁", "韩蕾", "顾岩", "苏禾", "陆遥", "郑茵", "贺川", "乔楠",
              "叶澜", "褚航", "孟瑶", "庞博", "曹钧", "邹萍"],
    "people": ["小樊", "阿坤", "老葛", "莫琳", "佟佳", "饶婷", "卫骁", "聂欢", "涂磊", "柏雯", "景睿", "阚飞",
               "宁朔", "薛凛", "车媛", "晏秋", "申屠越", "司徒静", "龚可", "鲍勃"],
    "roles": {
        "van": {"says": [("self", "{x}把面包车借我开了整整一个周末，省了我一大笔钱。"),
                         ("other", "幸亏那个周末{x}把面包车钥匙交给你了。")],
                "desc": ["曾把自家座驾让{s}用过的那位", "替{s}解决出行工具的那位"],
                "decoys": ["修理厂临时让我用一辆代步的座驾，自家那辆还在修。", "这边出行全靠三家公交公司，互相扯皮。"]},
        "plants": {"says": [("self", "我去里斯本那段时间，全靠{x}帮我把那几盆蕨类养活了。"),
                            ("other", "你出门那阵子，{x}每天傍晚都去你阳台浇水吧？")],
                   "desc": ["{s}旅途中替其照料花草的朋友", "{s}外游期间打理绿植的那位"],
                   "decoys": ["我照料的花草全蔫了，我真是养啥死啥。", "那趟旅途花的钱是预算的两倍。"]},
        "laptop": {"says": [("self", "我把茶泼到笔记本上，{x}连夜给我弄好了。"),
                            ("other", "{x}拆开之后，你那台笔记本还能开机吗？")],
                   "desc": ["抢救回{s}那台被饮料浸过的电脑的那位", "把{s}进水的电脑修活的朋友"],
                   "decoys": ["办公室电脑更新完就死机，谁也抢救不回来。", "超市四号货架有人洒了饮料，满地都是醋味。"]},
        "cake": {"says": [("self", "我三十岁那天，{x}亲手烤了个三层巧克力蛋糕。"),
                          ("other", "{x}给你烤的那个巧克力蛋糕太绝了。")],
                 "desc": ["{s}生日宴上甜品的制作者", "为{s}庆生准备甜食的那位"],
                 "decoys": ["隔壁的生日宴一直闹到凌晨三点。", "医生让我戒甜品一个月。"]},
        "climbing": {"says": [("self", "当初是{x}硬拉着我去的抱石馆。"),
                              ("other", "你开始玩抱石，还不是因为{x}天天磨你。")],
                     "desc": ["带{s}入门攀爬运动的朋友", "引{s}爱上攀岩的那位"],
                     "decoys": ["海边那些攀爬运动看着就吓人。", "朋友入门攀岩以后，三句话不离岩壁。"]},
        "tutor": {"says": [("self", "大二那年要不是{x}陪我熬夜补统计，我肯定挂科了。"),
                           ("other", "当年在学校不就是{x}给你补的统计学嘛？")],
                  "desc": ["读书时期助{s}搞定概率课的那位", "求学阶段替{s}辅导数理的那位"],
                  "decoys": ["银行帮我们算房贷那套概率，听得我头大。", "外甥读书时期的档案被弄丢两回了。"]},
        "hospital": {"says": [("self", "我手腕骨折那晚，{x}在急诊陪我坐到凌晨四点。"),
                              ("other", "你摔断手腕那晚，{x}一直守在急诊室吧。")],
                     "desc": ["{s}受伤后在医院整夜作伴的那位", "{s}负伤入院时守候身旁的朋友"],
                     "decoys": ["市医院晚上不开放探视了，整夜都没法作伴。", "我爷爷三月份髋部受伤，现在又能走路了。"]},
        "letters": {"says": [("self", "奶奶那些波兰文的信，是{x}一封封帮我译出来的。"),
                             ("other", "{x}把你外婆的波兰语书信都翻成中文了没？")],
                    "desc": ["替{s}解读长辈旧函件的那位", "帮{s}弄懂祖辈手迹的那位"],
                    "decoys": ["长辈留下的旧函件还塞在阁楼的鞋盒里。", "冰箱上那张手迹潦草的便条是房东留的。"]},
        "tailor": {"says": [("self", "晚宴前一个小时，{x}帮我把西裤的裤脚改好了。"),
                            ("other", "多亏{x}拿针线救了你那套西装。")],
                   "desc": ["为{s}的正式场合修整衣着的那位", "赶在典礼前替{s}收拾衣服的朋友"],
                   "decoys": ["单位的正式场合最烦，我永远不知道穿什么衣服。", "干洗店把我的大衣修整得更难看了。"]},
        "taxes": {"says": [("self", "四月份{x}帮我把个税申报搞定了，不然就错过截止日期了。"),
                           ("other", "今年又是{x}替你填的税表吧？")],
                  "desc": ["为{s}处理财务文书的那位", "为{s}打点收入申报的那位"],
                  "decoys": ["办护照的文书处理了好久。", "税务局网站做得真烂，打交道太费劲。"]},
        "tent": {"says": [("self", "{x}借了我一顶帐篷和两个睡袋去音乐节。"),
                          ("other", "音乐节那顶帐篷你还给{x}了没？")],
                 "desc": ["给{s}提供露营装备的那位", "让{s}能在野外过夜的那位"],
                 "decoys": ["磨坊路上那家露营装备店要关门了。", "屋里热得像蒸笼，我们干脆在天台过夜。"]},
        "battery": {"says": [("self", "车在停车场打不着火，{x}半夜拿着搭电线过来救急。"),
                             ("other", "那天半夜{x}过去帮你搭电了吧？")],
                    "desc": ["{s}的座驾趴窝时赶来救援的那位", "{s}引擎罢工那晚出手相助的朋友"],
                    "decoys": ["洗衣机今早也趴窝了，电机一声不吭。", "高速公路的引擎声吵得我整晚睡不着。"]},
        "referral": {"says": [("self", "我这份工作，是{x}帮我递的简历。"),
                              ("other", "你那份工作不就是{x}内推的嘛。")],
                     "desc": ["把{s}引荐给目前东家的那位", "替{s}向雇主担保的那位"],
                     "decoys": ["目前东家排的新班表谁都不满意。", "雇主要求担保人签字，真麻烦。"]},
        "swim": {"says": [("self", "我九岁那年夏天，是{x}在湖边教会我游泳的。"),
                          ("other", "听说你小时候是{x}教你游泳的？")],
                 "desc": ["{s}童年时带其学会戏水的人", "让{s}幼年就不怕下水的那位"],
                 "decoys": ["我童年戏水被水母蜇过一次。", "隔壁那孩子整个暑假都泡在水里。"]},
    },
    "attrs": {
        "job": {"values": ["药剂师", "急救员", "木匠", "调音师", "花艺师", "助产士", "养蜂人", "精算师", "潜水教练",
                           "地质勘探员", "兽医助理", "锁匠"],
                "says": ["{x}上个月被录用了，当{v}去了。", "{x}开春起一直干{v}这一行。",
                         "{x}转行当了{v}，说终于找到喜欢的活儿。"],
                "ask": ["{d}靠什么谋生？", "{d}从事什么职业？"],
                "decoys": ["这年头搞音乐根本没法谋生。", "银行表格居然要填我爷爷的职业，奇怪。"]},
        "city": {"values": ["青岛", "大理", "哈尔滨", "厦门", "桂林", "洛阳", "拉萨", "珠海", "扬州", "西宁", "烟台",
                            "丽江"],
                 "says": ["{x}三月份收拾东西搬到{v}去了。", "{x}已经在{v}安顿下来，小区楼下就有菜市场。",
                          "听{x}讲，{v}那边的新家带个小院子。"],
                 "ask": ["{d}如今定居哪座城市？", "{d}眼下住哪儿？"],
                 "decoys": ["你觉得如今哪座城市房租最便宜？", "我表哥眼下住的那个县城连火车都不通。"]},
        "pet": {"values": ["乌龟", "鹦鹉", "兔子", "刺猬", "灵缇犬", "六角恐龙", "龙猫", "守宫", "玄凤", "荷兰猪"],
                "says": ["{x}养了只{v}，起名叫豆包。", "{x}家那只{v}把充电线咬断了。", "{x}从救助站领回来一只{v}。"],
                "ask": ["{d}身边陪伴的宠物是哪种？", "{d}喂着哪种小生灵？"],
                "decoys": ["房东说任何宠物都不行，连鱼都不让。", "阁楼里不知住着什么小生灵，整夜挠来挠去。"]},
        "hobby": {"values": ["击剑", "赛艇", "萨尔萨舞", "射箭", "木工", "观鸟", "围棋", "风筝冲浪", "杂耍",
                             "定向越野"],
                  "says": ["{x}报了个{v}班，一周去三次。", "{x}最近迷上了{v}。", "{x}每个周日都泡在{v}上。"],
                  "ask": ["{d}新添了什么爱好？", "{d}闲暇时喜欢干嘛？"],
                  "decoys": ["我得找个不用盯屏幕的爱好。", "孩子们闲暇时喜欢去蹦床公园。"]},
    },
    "relations": {
        "sibling": {"says": ["{x}的哥哥{y}这阵子住他们那儿。", "原来{y}是{x}的亲哥，世界真小。"],
                    "desc": "{d}的兄弟姐妹"},
        "spouse": {"says": ["{x}的老公{y}周五给我们做了一桌菜。", "{x}国庆节跟{y}订婚了。"],
                   "desc": "{d}的另一半"},
        "colleague": {"says": ["{y}跟{x}在同一间办公室，隔两张桌子。", "{x}和{y}一起值夜班。"],
                      "desc": "{d}的同事"},
    },
    "traits": {
        "vegetarian": {"says": [("self", "我六年没碰过荤腥了，一点不馋。"),
                                ("self", "今晚又煮了一锅扁豆汤，这辈子跟荤菜无缘了。"),
                                ("other", "你还是不吃带脸的东西，对吧？")],
                       "ask": [("{s}会去新开的烤肉店点牛排吗？", "不会：吃素")],
                       "decoys": ["车站旁新开的烤肉店周二牛排半价。"]},
        "early": {"says": [("self", "我每天五点就起床，周末也一样。"), ("self", "一到九点半我就开始打哈欠，熬不了夜。"),
                           ("other", "你总是第一个醒，简直不正常。")],
                  "ask": [("{s}会想去看凌晨时分登台的演出吗？", "不太会：睡得早")],
                  "decoys": ["周五那场演出八点登台，七点进场。"]},
        "seasick": {"says": [("self", "每次坐轮渡我都扶着栏杆吐。"), ("self", "连公园里的脚踏船都能把我晃晕。"),
                             ("other", "那回坐船游港口，你脸都白了，我没见过谁那么难受。")],
                    "ask": [("{s}会喜欢出海观鲸吗？", "不会：晕船")],
                    "decoys": ["出海观鲸因为风太大取消了。"]},
        "dairy": {"says": [("self", "牛奶奶酪一下肚，我就得疼好几个小时。"),
                           ("self", "现在买东西都得先看配料表有没有乳糖。"),
                           ("other", "给你买的燕麦奶，我记得奶油会让你闹肚子。")],
                  "ask": [("{s}会喜欢芝士火锅之夜吗？", "不会：乳糖不耐受")],
                  "decoys": ["我们打算给搬走的邻居办个芝士火锅之夜。"]},
        "crowds": {"says": [("self", "人一多我就累，聚会最后总躲在厨房。"),
                            ("self", "我宁可叫两个朋友来家里坐坐，也不去大派对。"),
                            ("other", "你又提前溜了，是嫌酒吧里挤吧？")],
                   "ask": [("{s}会喜欢连续三天的音乐节吗？", "不会：怕人多")],
                   "decoys": ["音乐节的票一个小时就卖光了。"]},
        "reader": {"says": [("self", "坐地铁通勤，我一个月能看完三本小说。"), ("self", "图书馆的管理员都认识我了。"),
                            ("other", "你外套兜里永远揣着本平装书。")],
                   "ask": [("{s}长途飞行时会随身带些什么？", "一本书")],
                   "decoys": ["下个月长途飞行去悉尼，想想就发怵。"]},
        "gardener": {"says": [("self", "西红柿终于熟了，多得吃不完。"), ("self", "我每天傍晚都去菜园除草浇水。"),
                              ("other", "你种的西葫芦快把整块地都占满了。")],
                     "ask": [("{s}去夏日烧烤聚会可能带什么？", "自己种的蔬菜")],
                     "decoys": ["烧烤聚会自带椅子哈，我们只有四把。"]},
        "teetotal": {"says": [("self", "我二〇一九年戒了以后就滴酒不沾。"),
                              ("self", "给我来杯加青柠的苏打水就行，一直这样。"),
                              ("other", "又是你当指定司机，反正你从来不碰那玩意儿。")],
                     "ask": [("{s}会想参加葡萄园的品鉴团吗？", "不会：不喝酒")],
                     "decoys": ["葡萄园品鉴团基本就是在冷地窖里站着。"]},
        "cold": {"says": [("self", "气温低于十度我就浑身难受。"), ("self", "一到十月我在家都穿两件毛衣。"),
                          ("other", "你五月份还开着取暖器，我看见了。")],
                 "ask": [("{s}会喜欢去滑雪度假吗？", "不会：怕冷")],
                 "decoys": ["滑雪度假加上缆车票贵得离谱。"]},
        "coffee": {"says": [("self", "我每天早上自己磨豆子，超市那种根本没法喝。"),
                            ("self", "找到一家烘焙坊，肯尼亚单品，我爱了。"),
                            ("other", "你跟你那把手冲壶，真服了。")],
                   "ask": [("送{s}什么礼物会让其开心？", "好咖啡")],
                   "decoys": ["我从来不知道送我爸什么礼物，他说袜子就开心。"]},
        "nolicence": {"says": [("self", "我一直没考下驾照，科目二挂了两次。"),
                               ("self", "公交、单车或者走路，我就这几个选择。"),
                               ("other", "每次都是别人开，你从来不握方向盘。")],
                      "ask": [("{s}能在清晨载朋友去机场吗？", "不能：不会开车")],
                      "decoys": ["清晨去机场的摆渡巴士挤满了。"]},
        "dogs": {"says": [("self", "小时候被大狗咬过，到现在见了都发怵。"),
                          ("self", "那条德牧又在路口，我又绕道走了。"),
                          ("other", "邻居家拉布拉多一扑过来，你整个僵住了。")],
                 "ask": [("{s}愿意去养着两只哈士奇的人家帮忙看房子吗？", "不愿意：怕狗")],
                 "decoys": ["对门新搬来一户养着两只哈士奇的人家。"]},
        "games": {"says": [("self", "周五是卡坦岛之夜，六个人围着餐桌。"), ("self", "我又入了一个车票之旅的扩展包。"),
                           ("other", "你那一架子装骰子的盒子快放不下了。")],
                  "ask": [("下雨的晚上待在家，{s}可能提议玩什么？", "桌游")],
                  "decoys": ["一下雨我膝盖就疼。"]},
        "spicy": {"says": [("self", "我啥都要撒辣椒面，煎蛋也不放过。"), ("self", "酱越辣越好，微辣等于白吃。"),
                           ("other", "你又点了菜单上最辣的那道，我看着你满头大汗。")],
                  "ask": [("一碗清淡的汤，{s}可能会往里加什么？", "辣椒或辣酱")],
                  "decoys": ["食堂的汤清淡，但便宜。"]},
    },
    "changes": {
        "job": {"values": (["银行柜员", "后厨帮工", "快递员", "小学老师", "客服专员", "房产中介", "咖啡师"],
                           ["护士", "电工", "护林员", "软件测试", "驾校教练", "牙科助理"]),
                "before": ["当{old}八年了，作息一点没变好。", "我还在当{old}，天天盼周五。"],
                "after": ["我辞职了，现在在学着当{new}。", "当{new}第一个月，一点不怀念以前那份工作。"],
                "ask": ["{s}当{new}之前是做什么的？", "{s}转行做{new}以前干哪行？"],
                "decoys": ["我表妹报了个{new}的培训班，要学两年。"]},
        "home": {"values": (["成都", "武汉", "苏州", "长沙", "南昌", "合肥"], ["杭州", "昆明", "福州", "南宁", "贵阳",
                                                                               "宁波"]),
                 "before": ["{old}那套房子暖气还是坏的。", "{old}的房租又涨了，离谱。"],
                 "after": ["终于在{new}把箱子拆完了，搬家那天累瘫了。", "搬来{new}一个月了，我还老迷路。"],
                 "ask": ["{s}搬到{new}之前住在哪里？", "{s}落脚{new}以前家在哪座城市？"],
                 "decoys": ["我姑老说{new}春天很美。"]},
        "pastime": {"values": (["合唱团", "象棋社", "业余话剧", "五人制足球"], ["陶艺", "公开水域游泳", "人体素描",
                                                                                "海上皮划艇"]),
                    "before": ["周四不行，我要去{old}。", "昨晚{old}挺顺利，大家越来越默契了。"],
                    "after": ["周四改去学{new}了，以前那个不玩了。", "最近迷上了{new}，别的都顾不上了。"],
                    "ask": ["{s}迷上{new}以前，业余时间玩什么？"],
                    "decoys": ["朋友试过一次{new}，一周就放弃了。"]},
        "car": {"values": (["老款捷达", "二手飞度", "五菱宏光", "旧桑塔纳"], ["比亚迪海豚", "理想L6", "小鹏P7",
                                                                              "特斯拉Model 3"]),
                "before": ["我那辆{old}年检又没过。", "天一冷，那辆{old}就打不着火。"],
                "after": ["周六把新买的{new}开回家了，车里还有股新味儿。", "{new}安静得我老怀疑它没启动。"],
                "ask": ["{s}买{new}之前开的是什么车？"],
                "decoys": ["邻居那辆{new}天天早上堵着车道。"]},
    },
    "openers": ["早啊！这周过得咋样？", "在吗？", "周五快乐！", "好久没聊了！", "嗨，忙不忙？", "晚上好，今天累不累？"],
    "closers": ["回头聊！", "先撤了，晚点说。", "不说了，我去做饭了。", "晚安～", "好了，干活去了，拜拜。",
                "周末再聊。"],
    "fillers": [
        "老样子呗。", "周二那场暴雨你赶上了没？", "垃圾又没人收。",
        "门终于不吱呀响了，我自己修的。",
        "哈哈，果然。", "那就放心了。", "真的假的？", "我煮了一大锅汤，够吃一礼拜。", "改天一起吃个午饭呗。",
        "手机一到下午三点就没电。", "地铁停运，我只好在家办公。", "大家都在追的那部新剧你看了没？",
        "第一集我就睡着了。",
        "差不多吧。", "祈祷一下。", "行了，不说我了。", "家里都还好吧？", "都挺好，就是累。", "楼上开派对开到两点。",
        "柠檬买多了，吃不完。", "连着下了十一天雨。", "走廊刷成了一种灰不灰的颜色。", "一直想给我姑打个电话。",
        "邮局排队排到门外去了。", "超时十分钟，被贴了条。", "听着就累。", "那太好了，我乐意。",
        "我在努力十二点前睡，失败。",
        "这个月电费吓死人。", "那个活动你后来去了吗？", "没去成，临时有事。", "一转眼又到月底了。",
        "爬楼梯的时候膝盖咔咔响。",
        "街角那家面包店关门了。", "有消息告诉我一声。", "我把链接发你。", "那期播客比我想的好听。",
        "工作还行，有点闲。",
        "翻了翻老照片，发型换了好多。", "隔壁的猫老睡在我们的棚顶上。",
        "笑死我了。", "我也是。", "停了一个小时电。", "那几本图书馆的书终于还了，交了罚款。", "菜市场已经有草莓了。",
        "放完假还得再放个假缓缓。", "我姐让我替她问好。", "单位打印机把我的报告吃了。", "我在织围巾，织得歪歪扭扭。",
        "没啥新鲜事。", "我们去吃了那家越南菜，挺好。", "路上结冰，小心点。", "伞又丢了。", "你昨晚睡着了没？",
    ],
}
TABLES = {"en": EN, "zh": ZH}
# a session holds at most this many planted turns (evidence, decoys), so fillers keep it small talk
PLANTED_PER_SESSION = 12


# -- one conversation ------------------------------------------------------------------------------
class Draft:
    """A conversation being written: planted turns per session (dicts, ids given at layout) and
    the questions that point at them."""

    def __init__(self, rng: random.Random, lang: str, speakers: list[str], sessions: int):
        self.rng, self.lang, self.speakers = rng, lang, speakers
        self.sessions: list[list[dict]] = [[] for _ in range(sessions)]
        self.questions: list[dict] = []
        self.used_decoys: set[str] = set()
        self.used_facts: set[str] = set()  # attribute templates said already: a conversation varies them

    def partner(self, speaker: str) -> str:
        return self.speakers[1 - self.speakers.index(speaker)]

    def free_sessions(self, count: int, ordered: bool = False) -> list[int]:
        """``count`` distinct sessions with room, in random order (``ordered``: in time order)."""
        room = [i for i, turns in enumerate(self.sessions) if len(turns) < PLANTED_PER_SESSION]
        picked = self.rng.sample(room, count)
        return sorted(picked) if ordered else picked

    def plant(self, session: int, speaker: str, text: str) -> dict:
        turn = {"speaker": speaker, "text": text[0].upper() + text[1:]}  # a value may open the sentence
        self.sessions[session].append(turn)
        return turn

    def plant_decoy(self, templates: list[str], **values: str) -> None:
        """One decoy turn (question words, no answer) not yet used in this conversation, anywhere."""
        fresh = [t.format(**values) for t in templates if t.format(**values) not in self.used_decoys]
        if fresh:
            text = self.rng.choice(fresh)
            self.used_decoys.add(text)
            self.plant(self.free_sessions(1)[0], self.rng.choice(self.speakers), text)

    def ask(self, question: str, answer: str, evidence: list[dict], category: str) -> None:
        self.questions.append({"question": question, "answer": answer, "evidence": evidence, "category": category})


def first_clean(rng: random.Random, options: list[tuple[str, list[tuple[str, str]]]], lang: str,
                what: str, worn: list[int] | None = None) -> tuple[str, list[tuple[str, str]]]:
    """The first (question, [(speaker, text)...]) in a shuffled order — the least ``worn`` first
    (how often its phrasing was used already) — whose question shares no content unit with its
    evidence texts; ``PhrasingClash`` naming ``what`` when none does."""
    order = list(range(len(options)))
    rng.shuffle(order)
    order.sort(key=lambda i: worn[i] if worn else 0)
    for question, evidence in (options[i] for i in order):
        if not shares_content(question, [text for _, text in evidence], lang):
            return question, evidence
    raise PhrasingClash(f"{lang} {what}: every phrasing shares a content unit with its evidence")


def with_article(value: str, lang: str) -> str:
    """English "a pharmacist" / "an actuary"; other languages have no article."""
    if lang != "en":
        return value
    return ("an " if value[0].lower() in "aeiou" else "a ") + value


def said(statement: tuple[str, str], subject: str, partner: str, **values: str) -> tuple[str, str]:
    who, template = statement
    return (subject if who == "self" else partner), template.format(**values)


def hop_question(d: Draft, table: dict, subject: str, role: str, people: list[str], relation: str | None,
                 attr: str, value: str) -> None:
    """A 2-hop (``relation`` None: deed → person → attribute) or 3-hop (deed → person → relative →
    attribute) question; each evidence turn in its own session."""
    r, a = table["roles"][role], table["attrs"][attr]
    partner, x = d.partner(subject), people[0]
    target = people[-1]
    options, worn, facts = [], [], []
    for says, desc, fact, ask in itertools.product(r["says"], r["desc"], a["says"], a["ask"]):
        described = desc.format(s=subject)
        evidence = [said(says, subject, partner, x=x)]
        if relation:
            link = table["relations"][relation]
            described = link["desc"].format(d=described)
            evidence += [(d.rng.choice(d.speakers), link_says.format(x=x, y=target)) for link_says in link["says"]]
        evidence.append((d.rng.choice(d.speakers), fact.format(x=target, v=value, va=with_article(value, d.lang))))
        added = ([(ask.format(d=described), evidence[:1] + [link_turn] + evidence[-1:])
                  for link_turn in evidence[1:-1]] if relation else [(ask.format(d=described), evidence)])
        options += added
        worn += [fact in d.used_facts] * len(added)
        facts += [fact] * len(added)
    question, evidence = first_clean(d.rng, options, d.lang, f"role {role} / attribute {attr} / {relation}", worn)
    d.used_facts.add(facts[options.index((question, evidence))])
    sessions = d.free_sessions(len(evidence))
    turns = [d.plant(s, speaker, text) for s, (speaker, text) in zip(sessions, evidence, strict=True)]
    d.ask(question[0].upper() + question[1:], value, turns, "multi-hop-3" if relation else "multi-hop")
    d.plant_decoy(r["decoys"])
    d.plant_decoy(a["decoys"])


def inference_question(d: Draft, table: dict, subject: str, trait: str) -> None:
    """A habit stated twice in other words (two sessions), asked about as a situation."""
    t = table["traits"][trait]
    partner = d.partner(subject)
    options = [(ask.format(s=subject), [said(a, subject, partner), said(b, subject, partner)])
               for a, b in itertools.combinations(t["says"], 2) for ask, _ in t["ask"]]
    question, evidence = first_clean(d.rng, options, d.lang, f"trait {trait}")
    answer = dict((ask.format(s=subject), ans) for ask, ans in t["ask"])[question]
    turns = [d.plant(s, speaker, text) for s, (speaker, text) in zip(d.free_sessions(2), evidence, strict=True)]
    d.ask(question, answer, turns, "inference")
    d.plant_decoy(t["decoys"])


def change_question(d: Draft, table: dict, subject: str, kind: str) -> None:
    """A change in the subject's life: the before turn in an earlier session than the after turn."""
    c = table["changes"][kind]
    old, new = d.rng.choice(c["values"][0]), d.rng.choice(c["values"][1])
    sides = {"old": old, "old_a": with_article(old, d.lang), "new": new, "new_a": with_article(new, d.lang)}
    before, after = d.free_sessions(2, ordered=True)
    turns = [d.plant(before, subject, d.rng.choice(c["before"]).format(**sides)),
             d.plant(after, subject, d.rng.choice(c["after"]).format(**sides))]
    d.ask(d.rng.choice(c["ask"]).format(s=subject, **sides), old, turns, "temporal-change")
    d.plant_decoy(c["decoys"], **sides)


def bystander(d: Draft, table: dict, person: str, attr: str, value: str) -> None:
    """Someone no question is about, with an attribute of a kind the questions ask for."""
    says = table["attrs"][attr]["says"]
    fact = d.rng.choice([t for t in says if t not in d.used_facts] or says)
    d.used_facts.add(fact)
    text = fact.format(x=person, v=value, va=with_article(value, d.lang))
    d.plant(d.free_sessions(1)[0], d.rng.choice(d.speakers), text)


def layout(d: Draft, conv_id: str, start: date, lang: str) -> list[dict]:
    """Planted turns mixed with small talk (12-20 turns a session, no filler twice in one session),
    most sessions opened by a greeting and many closed by a goodbye, speakers of the fillers
    alternating with their neighbours, ids and dates given."""
    table = TABLES[lang]
    sessions, day = [], start
    for n, planted in enumerate(d.sessions):
        size = max(len(planted), d.rng.randint(12, 20))
        opener = [d.rng.choice(table["openers"])] if d.rng.random() < 0.7 else []
        closer = [d.rng.choice(table["closers"])] if d.rng.random() < 0.6 else []
        middle = d.rng.sample(table["fillers"], max(0, size - len(planted) - len(opener) - len(closer)))
        turns = planted + [{"speaker": None, "text": t} for t in middle]
        d.rng.shuffle(turns)
        turns = [{"speaker": None, "text": t} for t in opener] + turns + [{"speaker": None, "text": t} for t in closer]
        for i, turn in enumerate(turns):
            if turn["speaker"] is None:
                turn["speaker"] = d.partner(turns[i - 1]["speaker"]) if i else d.rng.choice(d.speakers)
            turn["turn_id"] = f"{conv_id}-s{n:02d}-t{i:02d}"
        kept = [{"turn_id": t["turn_id"], "speaker": t["speaker"], "text": t["text"]} for t in turns]
        sessions.append({"session_id": f"{conv_id}-s{n:02d}", "date": day.isoformat(), "turns": kept})
        day += timedelta(days=d.rng.randint(6, 28))
    return sessions


def hop_with_a_fitting_value(d: Draft, table: dict, subject: str, role: str, chain: list[str], hops: int,
                             unused: dict[str, list[str]]) -> None:
    """A hop question about the first link, attribute kind and value that can be asked without a shared
    unit: a value can clash with a description by chance (大理 beside 处理), so the next value is tried,
    then the next kind, then the next link; the value asked is used up."""
    relations = d.rng.sample(sorted(table["relations"]), len(table["relations"])) if hops == 3 else [None]
    for relation, attr in itertools.product(relations, d.rng.sample(sorted(table["attrs"]), len(table["attrs"]))):
        for value in reversed(unused[attr]):
            try:
                hop_question(d, table, subject, role, chain, relation, attr, value)
            except PhrasingClash:
                continue
            unused[attr].remove(value)
            return
    raise PhrasingClash(f"{d.lang} role {role}: no attribute value can be asked without a shared unit")


def conversation(lang: str, seed: int, n: int) -> dict:
    table = TABLES[lang]
    rng = random.Random(f"hard2-{lang}-{seed}-{n}")
    conv_id = f"hard2-{lang}-{n:02d}"
    speakers = rng.sample(table["names"], 2)
    d = Draft(rng, lang, speakers, rng.randint(8, 12))
    # nobody shares a unit with a speaker's name (宁朔 beside 邵宁): the name is in questions, theirs in evidence
    named = content_units(" ".join(speakers), lang)
    others = [p for p in table["people"] if not content_units(p, lang) & named]
    people = iter(rng.sample(others, MULTI_HOP + 2 * MULTI_HOP_3 + 2))
    roles = iter(rng.sample(sorted(table["roles"]), MULTI_HOP + MULTI_HOP_3))
    unused = {kind: rng.sample(a["values"], len(a["values"])) for kind, a in table["attrs"].items()}
    for hops in [2] * MULTI_HOP + [3] * MULTI_HOP_3:
        chain = [next(people) for _ in range(hops - 1)]
        hop_with_a_fitting_value(d, table, rng.choice(speakers), next(roles), chain, hops, unused)
    traits = iter(rng.sample(sorted(table["traits"]), len(table["traits"])))
    while sum(q["category"] == "inference" for q in d.questions) < INFERENCE:
        try:  # a habit whose phrasings all clash with this speaker's name gives way to the next habit
            inference_question(d, table, rng.choice(speakers), next(traits))
        except PhrasingClash:
            continue
    for kind in rng.sample(sorted(table["changes"]), CHANGES):
        change_question(d, table, rng.choice(speakers), kind)
    for person in people:
        attr = rng.choice(sorted(table["attrs"]))
        bystander(d, table, person, attr, unused[attr].pop())
    start = date(2023, 1, 1) + timedelta(days=rng.randint(0, 600))
    sessions = layout(d, conv_id, start, lang)
    questions = [{"qid": f"{conv_id}-q{i:02d}", "question": q["question"], "answer": q["answer"],
                  "evidence": [t["turn_id"] for t in q["evidence"]], "category": q["category"]}
                 for i, q in enumerate(d.questions)]
    return {"conv_id": conv_id, "lang": lang, "tuning": True, "speakers": speakers, "sessions": sessions,
            "questions": questions}


def generate(lang: str, seed: int = 0, count: int = CONVERSATIONS) -> list[dict]:
    """``count`` conversations in ``lang`` ("en" or "zh"), the same for the same seed."""
    if lang not in TABLES:
        raise ValueError(f"lang: {lang!r} is not one of {sorted(TABLES)}")
    return [conversation(lang, seed, n) for n in range(count)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT, help="folder for hard2-en.json and hard2-zh.json")
    args = ap.parse_args()
    for lang in TABLES:
        doc = {"name": f"hard2-{lang}", "generator": "bench/hard2conv.py", "seed": args.seed,
               "conversations": generate(lang, args.seed)}
        path = args.out / f"hard2-{lang}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        questions = [q for c in doc["conversations"] for q in c["questions"]]
        print(f"wrote {path.name}: {len(doc['conversations'])} conversations, {len(questions)} questions")


if __name__ == "__main__":
    main()
