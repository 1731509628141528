"""Harder held-out conversational sets (design.md §issue-30 point 4), written blind: without reading the
product's recall code, so they cannot have been tuned to it.

    python bench/hardconv.py            # writes bench/data/hard-en.json and bench/data/hard-zh.json
    python bench/hardconv.py --check    # regenerates in memory and fails if the files differ

Each set is 10 long conversations between two people over ~10 dated sessions (the format
``bench/quality.py`` reads: ``conv_id``, ``sessions[{session_id, date, turns[{turn_id, speaker,
text}]}]``, ``questions[{qid, question, answer, evidence, category}]``, and ``tuning``: the even
conversations are the tuning half, the odd ones held out). Question types:

* ``multi-hop`` — two evidence turns in different sessions, linked by a third person the question
  never names: "Which city did the person who fixed Mei's bike move to?" over "Jun repaired my
  bicycle" … "Jun relocated to Chengdu".
* ``multi-hop-3`` — three turns: the act names a person, a second turn names that person's
  relative, a third says where the relative went (or what they do …).
* ``inference`` — "would she enjoy …", "what might he …": two turns that imply a trait without
  naming it ("my knees go weak on the balcony", "I took the stairs, not the glass lift").

Every question shares **no content word** with its evidence turns (checked at generation: word
stems in English, CJK bigrams in Chinese, minus function words), and decoy turns elsewhere in the
conversation do share the question's words, so an exact-word match finds the decoys, not the
evidence. Names, acts, attributes, traits and phrasings are drawn per conversation from pools, in
a fixed order per seed: the output is deterministic. The tuning and held-out halves draw their
acts and traits from disjoint halves of the pools, so a fit on one half meets new phrasings in
the other.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from datetime import date, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data"
CONVERSATIONS = 10
SESSIONS = 10

# ------------------------------------------------------------------------------------------ English
EN = {
    "pairs": [
        ("Mei", "Tom"),
        ("Priya", "Daniel"),
        ("Sofia", "Kwame"),
        ("Hana", "Lucas"),
        ("Aisha", "Ben"),
        ("Elena", "Ravi"),
        ("Yuki", "Marcus"),
        ("Nora", "Diego"),
        ("Ingrid", "Samir"),
        ("Chloe", "Felix"),
    ],
    "people": [
        "Jun",
        "Oskar",
        "Leila",
        "Mateo",
        "Farah",
        "Bjorn",
        "Ines",
        "Kofi",
        "Svetlana",
        "Tariq",
        "Greta",
        "Emeka",
        "Paloma",
        "Henrik",
        "Zara",
        "Anton",
        "Rosa",
        "Idris",
        "Maren",
        "Callum",
        "Noor",
        "Lars",
    ],
    # (the act as a question says it, as a turn says it, a decoy turn that shares the question's words)
    "acts": [
        (
            "fixed {o}'s bike",
            "{X} repaired {my} bicycle, it rides like new",
            "My bike has a flat again, it needs to be fixed before Monday.",
        ),
        (
            "lent {o} a car",
            "{X} handed {me} the keys to that old hatchback for the trip",
            "Renting a car for the holidays costs a fortune, nobody lent me one.",
        ),
        (
            "looked after {o}'s cat",
            "{X} fed {my} kitten every evening while {I} {was} away",
            "The cat knocked a glass off the table again, I should have looked after it better.",
        ),
        (
            "taught {o} to drive",
            "{X} sat beside {me} through all those lessons until {I} passed the road test",
            "I hate being taught anything by video, and I still can't drive stick.",
        ),
        (
            "painted {o}'s flat",
            "{X} spent two days putting new colour on the walls of {my} apartment",
            "The flat above us is being painted, the smell is everywhere.",
        ),
        (
            "helped {o} move house",
            "{X} carried boxes with {me} all day when {I} changed addresses",
            "My parents want to move house again, it never ends.",
        ),
        (
            "cut {o}'s hair",
            "{X} gave {me} that trim, the shortest {I}'ve had in years",
            "I cut my finger on the hair clipper, don't laugh.",
        ),
        (
            "edited {o}'s thesis",
            "{X} went through {my} dissertation line by line",
            "My thesis topic changed twice, my supervisor edited the title again.",
        ),
        (
            "photographed {o}'s wedding",
            "{X} took all the pictures when {I} got married",
            "We went to a wedding where nobody photographed anything, phones were banned.",
        ),
        (
            "tuned {o}'s piano",
            "{X} came over and adjusted the strings on {my} old upright",
            "A piano in the lobby of the hotel was so badly tuned it hurt.",
        ),
        (
            "coached {o}'s football team",
            "{X} trains the squad {I} kick around with on Sundays",
            "Our football team coached by volunteers lost every match.",
        ),
        (
            "built {o}'s website",
            "{X} put together {my} online portfolio page",
            "Building a website from scratch looks fun, maybe one day.",
        ),
        (
            "introduced {o} to jazz",
            "{X} was the first to play {me} Coltrane records",
            "Jazz bars in this town get introduced as new every year but they're all the same.",
        ),
        (
            "walked {o}'s dog",
            "{X} took {my} spaniel out twice a day while {I} {was} sick",
            "The dog walked right into the lake yesterday, what a mess.",
        ),
        (
            "drove {o} to the airport",
            "{X} gave {me} a lift at dawn so {I} could catch {my} flight",
            "The airport bus drove past without stopping, so I missed the check-in.",
        ),
        (
            "babysat {o}'s kids",
            "{X} stayed home with {my} two little ones the night {I} went to the concert",
            "Those kids next door need a babysitter every weekend, poor parents.",
        ),
    ],
    # (attribute: question around {d}, the turn, values, a decoy turn with the question's words)
    "attrs": [
        (
            "Which city did {d} move to?",
            "{X} relocated to {v} in the spring",
            ["Lisbon", "Osaka", "Denver", "Tallinn", "Porto", "Leeds", "Calgary", "Auckland", "Valencia", "Krakow"],
            "Which city would you move to if money didn't matter?",
        ),
        (
            "What does {d} do for work?",
            "{X} got hired as a {v} last month",
            ["pharmacist", "pilot", "architect", "welder", "sommelier", "midwife", "surveyor", "locksmith"],
            "Work has been so much lately, what do you even do to switch off?",
        ),
        (
            "What animal does {d} have now?",
            "{X} brought home a {v} from the shelter",
            ["greyhound", "parrot", "tortoise", "ferret", "rabbit", "cockatoo", "hedgehog"],
            "Do you have a favourite animal at the zoo now that the new enclosure is open?",
        ),
        (
            "Which instrument does {d} play?",
            "{X} has been practising the {v} every night",
            ["cello", "trombone", "banjo", "harp", "clarinet", "oboe", "accordion"],
            "Does that band play any instrument live or is it all laptops?",
        ),
        (
            "What language is {d} studying?",
            "{X} enrolled in evening {v} classes",
            ["Portuguese", "Korean", "Greek", "Swahili", "Dutch", "Finnish", "Turkish"],
            "Studying a language at my age feels hopeless.",
        ),
        (
            "Which sport did {d} take up?",
            "{X} joined a {v} club nearby",
            ["fencing", "rowing", "climbing", "curling", "archery", "judo", "squash"],
            "I should take up a sport, any sport, my back is killing me.",
        ),
    ],
    # (relation as a question says it, as a turn says it)
    "relations": [
        ("sibling", "sister"),
        ("sibling", "brother"),
        ("spouse", "husband"),
        ("spouse", "wife"),
        ("housemate", "flatmate"),
        ("boss", "manager"),
    ],
    "multi_hop_q": ["{q}", "Remind me, {ql}", "{q} I forgot."],
    "desc": ["the person who {a}", "whoever {a}", "the friend who {a}"],
    "relation_turn": "{X} told {me} {X_pos} {rel}, {Y}, is staying with them for a while",
    "inference": [
        {
            "questions": [
                "Would {n} enjoy a hot-air balloon ride?",
                "Is a glass-bottomed skywalk a good outing for {n}?",
            ],
            "answer": "no: afraid of heights",
            "evidence": [
                "My knees go weak whenever I peek over the balcony rail up on the nineteenth storey.",
                "I took the staircase instead of that see-through lift at the mall.",
                "Ladders are the worst, I made my brother clean the gutters.",
            ],
            "decoys": [
                "They do balloon rides over the valley at dawn, the photos look unreal.",
                "The skywalk over the gorge has a glass bottom, a good outing if you're brave.",
            ],
        },
        {
            "questions": [
                "Would a steakhouse be a good place to take {n} for a birthday dinner?",
                "What might {n} order at a barbecue?",
            ],
            "answer": "no steak / something vegetarian: does not eat meat",
            "evidence": [
                "It's been six years since I last ate any meat.",
                "The lentil stew I cooked last night turned out great.",
                "I always ask for the tofu version, force of habit.",
            ],
            "decoys": [
                "The new steakhouse downtown had a queue round the block for its birthday dinner deal.",
                "Whatever you order at a barbecue, it ends up tasting of smoke.",
            ],
        },
        {
            "questions": [
                "Would {n} be comfortable staying at a friend's place with three cats?",
                "Should {n} adopt a kitten?",
            ],
            "answer": "no: allergic to cat fur",
            "evidence": [
                "I start sneezing the second I walk into a house with fur on the couch.",
                "Antihistamines are basically a food group for me at my aunt's, she has two Persians.",
            ],
            "decoys": [
                "A friend's cats knocked over the tree again, three of them this year.",
                "Should we adopt a kitten? The shelter has a whole litter.",
            ],
        },
        {
            "questions": ["Would {n} like a week-long cruise?", "Is a whale-watching boat trip a good gift for {n}?"],
            "answer": "no: gets seasick",
            "evidence": [
                "The ferry to the island had me green and leaning over the railing the whole crossing.",
                "Even a rowing dinghy on a calm lake makes my stomach turn.",
            ],
            "decoys": [
                "Cruise prices dropped a lot this week, my neighbours booked one.",
                "The whale-watching boat trip is sold out as a gift voucher until May.",
            ],
        },
        {
            "questions": ["Is {n} likely to be awake for a sunrise call?", "Would a 6 a.m. meeting bother {n}?"],
            "answer": "fine: an early riser",
            "evidence": [
                "I'm out the door by five most days, best part of my day.",
                "By nine at night I'm usually asleep already.",
            ],
            "decoys": [
                "The sunrise call with the Sydney office got moved again.",
                "A 6 a.m. meeting would bother anyone, who schedules these?",
            ],
        },
        {
            "questions": ["When is {n} probably most productive?", "Would {n} rather have a meeting at 8 or at 4?"],
            "answer": "late: a night owl",
            "evidence": ["I did my best writing at 2 am again.", "Mornings are a write-off for me until about eleven."],
            "decoys": [
                "Productive people apparently have a meeting-free day, I read that somewhere.",
                "Would you rather have the meeting at 8 or at 4 on Tuesday?",
            ],
        },
        {
            "questions": ["Would {n} go for a luxury weekend at a spa?", "Is {n} likely to buy a new sports car soon?"],
            "answer": "unlikely: saving hard for a house deposit",
            "evidence": [
                "I'm putting every spare penny aside for the deposit on a place of our own.",
                "Cancelled the gym membership and both streaming subscriptions to cut costs.",
            ],
            "decoys": [
                "A luxury spa opened by the river, the weekend packages sold out already.",
                "That new sports car ad is everywhere, they want you to buy one soon.",
            ],
        },
        {
            "questions": [
                "Would {n} want tickets to a packed stadium concert?",
                "Is a huge New Year's street party {n}'s kind of thing?",
            ],
            "answer": "no: dislikes crowds",
            "evidence": [
                "Busy places drain me, I left the market after ten minutes.",
                "I'd rather have three people over than go to some big bash.",
            ],
            "decoys": [
                "Stadium concert tickets went on sale and the site crashed.",
                "The New Year's street party drew a huge crowd, kind of thing you see on the news.",
            ],
        },
        {
            "questions": ["What gift might {n} appreciate?", "What would make a good present for {n}?"],
            "answer": "a telescope or a star chart: into astronomy",
            "evidence": [
                "I drove out past the last streetlights just to watch the Perseids.",
                "Finally spotted Saturn's rings through my neighbour's scope.",
            ],
            "decoys": [
                "Gift cards are the lazy option but everyone seems to appreciate them.",
                "What would make a good present for a five-year-old, any idea?",
            ],
        },
        {
            "questions": ["What might {n} bring to a potluck?", "What could {n} contribute to a shared lunch?"],
            "answer": "homemade bread: has been learning to bake",
            "evidence": [
                "My sourdough starter finally bubbled properly.",
                "Third loaf this week, the crust keeps getting better.",
            ],
            "decoys": [
                "The office potluck is on Friday, bring something, they said.",
                "The shared lunch needs someone to contribute plates and cups.",
            ],
        },
        {
            "questions": ["What might {n} be doing on a Saturday afternoon?", "Where is {n} likely on match days?"],
            "answer": "at the football ground: a season-ticket holder",
            "evidence": [
                "Season ticket renewed, same seat behind the goal.",
                "We lost two-one in stoppage time, I couldn't sleep.",
            ],
            "decoys": [
                "Saturday afternoon traffic is terrible near the ring road.",
                "Match days mean the trams are packed, I'm likely to walk.",
            ],
        },
        {
            "questions": ["Would {n} enjoy a pasta-making class?", "Is a bakery tour a good treat for {n}?"],
            "answer": "no: coeliac, cannot eat wheat",
            "evidence": [
                "Wheat gives me terrible cramps, and the coeliac test came back positive.",
                "I bring my own rice crackers to every dinner now.",
            ],
            "decoys": [
                "A pasta class might be fun, they make ravioli by hand.",
                "The bakery tour was a treat, good reviews all round.",
            ],
        },
        {
            "questions": ["Why might {n} turn down a late dinner invitation?", "Why is {n} so tired lately?"],
            "answer": "a newborn at home",
            "evidence": [
                "The little one woke up four times last night.",
                "We're still figuring out the feeding schedule, nappies everywhere.",
            ],
            "decoys": [
                "Turn down the music, the dinner guests are arriving late anyway.",
                "I'm so tired lately, why does winter do this?",
            ],
        },
        {
            "questions": [
                "Would {n} like the chili challenge at the new Sichuan place?",
                "Should {n} order the vindaloo?",
            ],
            "answer": "no: cannot handle spicy food",
            "evidence": [
                "Even a pinch of pepper makes my eyes water and I have to stop eating.",
                "I asked for the mildest curry on the menu and it was still too hot for me.",
            ],
            "decoys": [
                "The new Sichuan place has a challenge board, names of everyone who finished.",
                "Should we order the vindaloo for the table or is that too much?",
            ],
        },
        {
            "questions": [
                "Why might {n} skip drinks on Friday?",
                "Why would {n} leave the party early on Saturday night?",
            ],
            "answer": "training for a marathon",
            "evidence": [
                "Long run of thirty kilometres this weekend, then tapering.",
                "Coach wants me off alcohol until race day.",
            ],
            "decoys": [
                "Friday drinks are at the rooftop bar, skip it and you'll regret it.",
                "Leave the party early on Saturday night if you want, nobody minds.",
            ],
        },
        {
            "questions": ["Would {n} rather holiday in Lapland or Bali?", "Which season does {n} probably like best?"],
            "answer": "Lapland / winter: loves the cold",
            "evidence": [
                "Snow up to the knees and minus ten, that's when I feel alive.",
                "The August heatwave made me miserable.",
            ],
            "decoys": [
                "Bali holiday photos all look the same after a while.",
                "Which season do you like best for a city break?",
            ],
        },
    ],
    "filler": [
        "Morning! How was the rest of your week?",
        "Not bad, just busy with work stuff.",
        "Did you end up watching that documentary?",
        "Half of it, I fell asleep on the sofa.",
        "The weather has been all over the place.",
        "Rain in the morning and sun by lunch, typical.",
        "Are you still doing the crossword every day?",
        "Every day, it's the only quiet ten minutes I get.",
        "I tried that new noodle bar on the corner.",
        "Any good?",
        "Decent broth, tiny portions.",
        "My phone screen cracked again.",
        "You really need a case.",
        "I know, I know.",
        "Work is sending me on a training course next month.",
        "Sounds dull but useful.",
        "I finished that novel you lent me.",
        "And? Did the ending make sense to you?",
        "Not really, but I liked the middle.",
        "We should get coffee soon.",
        "Thursday works for me.",
        "The neighbours are renovating again, drilling at eight.",
        "Earplugs, honestly.",
        "I've been trying to drink more water.",
        "How's that going?",
        "Two glasses a day, progress.",
        "Did you see the match last night?",
        "Only the highlights.",
        "My sister says hi.",
        "Say hi back!",
        "I spent the whole weekend sorting out the garage.",
        "Find anything interesting?",
        "Old postcards and a box of cables nobody needs.",
        "The bus was late three times this week.",
        "I'm thinking of repainting the bathroom blue.",
        "Bold choice.",
        "That podcast you sent was great.",
        "I can't believe it's already this late in the year.",
        "Time flies.",
        "Talk later, I have to run.",
        "Sure, speak soon.",
        "Ha, that's so typical of you.",
        "Let me check my calendar and get back to you.",
        "I burnt the rice again, don't ask.",
        "The library has a new reading room now.",
        "My laptop fan sounds like a jet engine.",
        "Any plans for the long weekend?",
        "Nothing yet.",
    ],
}

# ------------------------------------------------------------------------------------------ Chinese
ZH = {
    "pairs": [
        ("美玲", "志强"),
        ("晓雯", "浩然"),
        ("思琪", "建国"),
        ("雨桐", "子轩"),
        ("婉清", "俊杰"),
        ("佳怡", "明辉"),
        ("静怡", "宇航"),
        ("若曦", "文博"),
        ("欣然", "天佑"),
        ("梦瑶", "嘉诚"),
    ],
    "people": [
        "小芳",
        "阿俊",
        "丽娜",
        "老周",
        "春燕",
        "海涛",
        "秀英",
        "国栋",
        "慧敏",
        "振宇",
        "翠萍",
        "立新",
        "桂兰",
        "德华",
        "红梅",
        "晓东",
        "玉洁",
        "永康",
        "淑贞",
        "志远",
        "雅琴",
        "少杰",
    ],
    "acts": [
        ("帮{o}修自行车", "{X}把{my}单车弄好了，骑起来跟新的一样", "我的自行车又爆胎了，周一前得找人修。"),
        ("借车给{o}", "{X}把那辆旧掀背的钥匙交给{me}，让{me}开去旅行", "假期租车太贵了，也没人借车给我。"),
        ("替{o}照看猫", "{I}出差那几天，是{X}每晚过来喂{my}小咪", "猫又把杯子推到地上了，我该好好照看它。"),
        ("教{o}开车", "{X}陪{me}练了好几个月，{I}终于拿到驾照", "我最讨厌看视频学东西，开车到现在还不会挂挡。"),
        ("给{o}粉刷房间", "{X}花了两天把{my}公寓墙面重新漆了一遍", "楼上在粉刷房间，味道到处都是。"),
        ("帮{o}搬家", "{I}换住处那天，{X}陪{me}扛了一整天箱子", "我爸妈又想搬家，没完没了。"),
        ("给{o}理发", "{X}拿推子给{me}弄了个寸头，这几年最短的一次", "理发店排队排了一个小时，真受不了。"),
        ("帮{o}改论文", "{X}把{my}毕业稿子一行一行看过了", "论文题目改了两次，导师又动了标题。"),
        ("给{o}拍婚纱照", "{I}办喜事那天，相机一直在{X}手里", "我们参加的那场婚礼不让拍照，手机都收走了。"),
        ("给{o}调钢琴音", "{X}上门把{my}那台老立式琴的弦都校准了", "酒店大堂那架钢琴音准差得让人难受。"),
        ("当{o}足球教练", "{X}每周日训练{I}所在的那支业余球队", "志愿者带的足球队一场都没赢过，教练也换了。"),
        ("给{o}做网站", "{X}帮{me}搭了个在线作品集页面", "自己从零做网站看起来挺好玩，哪天试试。"),
        ("带{o}入门爵士乐", "第一次给{me}放柯川唱片的就是{X}", "城里的爵士乐酒吧每年都说自己是新开的，入门票也贵。"),
        ("替{o}遛狗", "{I}生病那阵，{X}每天两次带{my}小猎犬出门", "狗昨天直接冲进湖里了，遛一次累半天。"),
        (
            "开车送{o}去机场",
            "{I}赶早班飞机那天，是{X}一大早把{me}送到航站楼的",
            "去机场的大巴又晚点了，还不如自己开车。",
        ),
        ("帮{o}带孩子", "{I}去听音乐会那晚，{X}在家陪{my}两个小不点", "隔壁那两个孩子每个周末都要人帮忙带。"),
    ],
    "attrs": [
        (
            "{d}后来搬到哪个城市？",
            "{X}春天调去{v}了",
            ["成都", "厦门", "青岛", "昆明", "大连", "西安", "苏州", "长沙"],
            "要是钱不是问题，你想搬到哪个城市？",
        ),
        (
            "{d}现在做什么工作？",
            "{X}上个月被聘为{v}",
            ["药剂师", "飞行员", "建筑师", "焊工", "调酒师", "助产士", "测绘员"],
            "最近工作太多了，你下班后都做什么放松？",
        ),
        (
            "{d}现在养了什么动物？",
            "{X}从收容所领回一只{v}",
            ["灰狗", "鹦鹉", "乌龟", "雪貂", "兔子", "刺猬"],
            "动物园新馆开了，你现在最喜欢什么动物？",
        ),
        (
            "{d}会什么乐器？",
            "{X}每晚都在练{v}",
            ["大提琴", "长号", "竖琴", "单簧管", "二胡", "手风琴"],
            "那个乐队现场有人弹乐器吗，还是全靠电脑？",
        ),
        (
            "{d}在学什么语言？",
            "{X}报了{v}夜校班",
            ["葡萄牙语", "韩语", "希腊语", "荷兰语", "芬兰语", "土耳其语"],
            "这个年纪学语言，感觉没希望了。",
        ),
        (
            "{d}开始玩什么运动？",
            "{X}加入了附近的{v}俱乐部",
            ["击剑", "赛艇", "攀岩", "冰壶", "射箭", "柔道"],
            "我该开始玩点运动了，腰疼得厉害。",
        ),
    ],
    "relations": [
        ("兄弟姐妹", "姐姐"),
        ("兄弟姐妹", "弟弟"),
        ("配偶", "老公"),
        ("配偶", "老婆"),
        ("室友", "合租伙伴"),
        ("上司", "经理"),
    ],
    "multi_hop_q": ["{q}", "你还记得吗，{ql}", "{q}我忘了。"],
    "desc": ["{a}的那个人", "{a}的朋友", "当初{a}的人"],
    "relation_turn": "{X}说{X_pos}{rel}{Y}最近住在他们那儿",
    "inference": [
        {
            "questions": ["{n}会喜欢坐热气球吗？", "带{n}去玻璃栈道玩合适吗？"],
            "answer": "不会：恐高",
            "evidence": [
                "我在十九层阳台往下看一眼，腿就发软。",
                "商场那部透明观光梯我不敢坐，宁可爬楼梯。",
                "梯子最可怕了，清理屋檐的活都推给我哥。",
            ],
            "decoys": ["山谷那边清晨有热气球，照片美得不真实。", "玻璃栈道周末人挤人，带孩子去玩的特别多。"],
        },
        {
            "questions": ["{n}过生日，去牛排馆吃饭合适吗？", "烧烤聚会上{n}可能会点什么？"],
            "answer": "不合适/素的：不吃肉",
            "evidence": ["我已经六年没碰过荤腥了。", "昨晚炖的扁豆汤特别成功。", "我点菜一直选豆腐那一款，习惯了。"],
            "decoys": ["市中心新开的牛排馆生日套餐排队排到街角。", "烧烤聚会上点什么都一股烟味。"],
        },
        {
            "questions": ["让{n}住在养了三只猫的朋友家，方便吗？", "{n}适合领养一只小猫吗？"],
            "answer": "不方便：对猫毛过敏",
            "evidence": ["一进沙发上有毛的屋子，我就喷嚏不停。", "去姑妈家我得一直吃抗组胺药，她养了两只波斯。"],
            "decoys": ["朋友家的猫今年又把圣诞树推倒了，三只一起上。", "收容所有一窝小猫等人领养。"],
        },
        {
            "questions": ["{n}会喜欢一周的邮轮旅行吗？", "送{n}出海观鲸的船票合适吗？"],
            "answer": "不会：晕船",
            "evidence": ["去岛上那趟渡轮，我一路扶着栏杆吐。", "哪怕在平静的湖上划小舢板，我肚子都翻江倒海。"],
            "decoys": ["这周邮轮特价，邻居已经订了。", "出海观鲸的船票要提前一个月订。"],
        },
        {
            "questions": ["日出时分的电话会议，{n}起得来吗？", "早上六点开会会让{n}为难吗？"],
            "answer": "没问题：早起的人",
            "evidence": ["我多数日子五点就出门了，那是一天里最好的时光。", "晚上九点我通常已经睡着了。"],
            "decoys": ["和悉尼办公室的日出电话会议又改期了。", "早上六点开会，谁能不为难？"],
        },
        {
            "questions": ["{n}一天里什么时候效率最高？", "给{n}约会议，八点好还是下午四点好？"],
            "answer": "深夜：夜猫子",
            "evidence": ["凌晨两点我又写出了最满意的一段。", "上午十一点之前我基本是废的。"],
            "decoys": ["据说高效的人每周有一天不开会，我在哪儿看到过。", "周二的会议定在八点还是下午四点？"],
        },
        {
            "questions": ["{n}会去水疗中心过个奢华周末吗？", "{n}最近会买新跑车吗？"],
            "answer": "不太会：在攒首付",
            "evidence": [
                "我现在每一分闲钱都存起来，准备付我们自己房子的首付。",
                "健身卡和两个视频会员都退掉了，能省则省。",
            ],
            "decoys": ["河边开了家奢华水疗中心，周末套餐已经卖光。", "新跑车的广告到处都是，恨不得你马上买。"],
        },
        {
            "questions": ["{n}会想要体育场演唱会的票吗？", "跨年夜街头大派对适合{n}吗？"],
            "answer": "不会：讨厌人多",
            "evidence": [
                "热闹的地方让我很累，集市我十分钟就逃出来了。",
                "我宁可请三个朋友来家里，也不去什么大型聚会。",
            ],
            "decoys": ["体育场演唱会开票，网站直接崩了。", "跨年夜街头大派对上了新闻，人山人海。"],
        },
        {
            "questions": ["送{n}什么礼物最讨喜？", "给{n}挑什么礼物好？"],
            "answer": "望远镜或星图：喜欢天文",
            "evidence": ["我开车到没有路灯的地方，就为了看英仙座流星雨。", "终于用邻居的镜筒看到了土星环。"],
            "decoys": ["礼品卡最省事，好像大家都挺开心的。", "给五岁小孩挑什么礼物好，有主意吗？"],
        },
        {
            "questions": ["聚餐每人带一道菜，{n}可能带什么？", "{n}会给分享午餐贡献什么？"],
            "answer": "自己烤的面包：在学烘焙",
            "evidence": ["我的酸面种终于好好冒泡了。", "这周第三条了，外壳越来越脆。"],
            "decoys": ["公司周五聚餐，说好每人带一道菜。", "分享午餐还缺人贡献碗筷。"],
        },
        {
            "questions": ["周六下午{n}多半在干什么？", "有比赛的日子{n}一般在哪儿？"],
            "answer": "在球场：季票持有者",
            "evidence": ["季票续上了，还是球门后面那个座位。", "补时阶段被绝杀，一比二，我一夜没睡。"],
            "decoys": ["周六下午环路堵得要命。", "有比赛的日子，地铁挤得一般人都上不去。"],
        },
        {
            "questions": ["{n}会喜欢手工意面课吗？", "带{n}去逛面包房算是犒劳吗？"],
            "answer": "不会：乳糜泻，不能吃麦",
            "evidence": ["小麦一吃就绞着疼，乳糜泻检查结果是阳性。", "现在每次吃饭我都自带米饼。"],
            "decoys": ["手工意面课可能挺好玩，现场包饺子一样捏馄饨。", "那家面包房值得逛，算是犒劳自己。"],
        },
        {
            "questions": ["{n}为什么可能推掉很晚的饭局？", "{n}最近为什么这么累？"],
            "answer": "家里有新生儿",
            "evidence": ["小家伙昨晚醒了四次。", "喂奶的时间表我们还在摸索，尿布堆得到处都是。"],
            "decoys": ["把音乐关小点，吃饭的客人反正会晚到。", "最近为什么这么累，是不是冬天的缘故？"],
        },
        {
            "questions": ["新开的川菜馆有挑战辣椒的活动，{n}会参加吗？", "{n}适合点麻辣火锅吗？"],
            "answer": "不会：吃不了辣",
            "evidence": ["一点点胡椒就能让我眼泪直流、吃不下去。", "我点了菜单上最温和的咖喱，结果还是太冲了。"],
            "decoys": ["新开的川菜馆有块挑战榜，写着每个吃完的人的名字。", "那家店的麻辣火锅适合点吗？听说很正宗。"],
        },
        {
            "questions": ["{n}为什么可能不去周五的酒局？", "周六晚上的派对{n}为什么会早退？"],
            "answer": "在备战马拉松",
            "evidence": ["这周末要跑三十公里长距离，然后开始减量。", "教练让我比赛前滴酒不沾。"],
            "decoys": ["周五的酒局在天台酒吧，不去你会后悔。", "周六晚上的派对，早退也没人在意。"],
        },
        {
            "questions": ["{n}度假更想去拉普兰还是巴厘岛？", "{n}大概最喜欢哪个季节？"],
            "answer": "拉普兰/冬天：喜欢冷",
            "evidence": ["雪没过膝盖、零下十度，那时候我才觉得活着。", "八月那波高温让我难受死了。"],
            "decoys": ["巴厘岛度假的照片看多了都一个样。", "你最喜欢哪个季节出去玩？"],
        },
    ],
    "filler": [
        "早啊！这周过得怎么样？",
        "还行，就是工作上的事多。",
        "那部纪录片你最后看了吗？",
        "看了一半，在沙发上睡着了。",
        "最近天气真是变来变去。",
        "早上下雨中午出太阳，老样子。",
        "你还每天做填字游戏吗？",
        "每天都做，唯一清静的十分钟。",
        "街角新开的面馆我去试了。",
        "好吃吗？",
        "汤底不错，分量太小。",
        "我手机屏又碎了。",
        "你真该买个壳。",
        "知道知道。",
        "公司下个月派我去参加培训。",
        "听着无聊但有用。",
        "你借我的那本小说我看完了。",
        "结局你看懂了吗？",
        "没太懂，不过中间挺好看。",
        "我们找时间喝杯咖啡吧。",
        "周四我可以。",
        "邻居又在装修，八点就开钻。",
        "戴耳塞吧，真的。",
        "我最近在努力多喝水。",
        "进展如何？",
        "一天两杯，算进步了。",
        "昨晚的比赛你看了吗？",
        "只看了集锦。",
        "我姐让我跟你问好。",
        "替我问她好！",
        "整个周末都在收拾车库。",
        "翻出什么好东西没？",
        "一堆旧明信片和没人要的数据线。",
        "这周公交晚点了三次。",
        "我想把卫生间刷成蓝色。",
        "挺大胆的。",
        "你发的那期播客太好听了。",
        "一转眼又到年底了。",
        "时间过得真快。",
        "回头聊，我得走了。",
        "好，改天聊。",
        "哈哈，真像你会干的事。",
        "我看看日程再回你。",
        "我又把饭煮糊了，别问。",
        "图书馆新开了个阅览室。",
        "我笔记本的风扇响得像飞机。",
        "小长假有什么打算？",
        "还没想好。",
    ],
}

_STOP_WORDS = """a an the of to in on at for from by with and or but if so as is are was were be been being do does did
done doing have has had having i me my mine you your yours he him his she her hers it its we us our they them their
this that these those who whom whose which what when where why how would could should will shall can may might must
not no yes any some all every each very just still again also too than then there here about into over up down out
off now new one two kind thing things person people friend whoever remember forgot"""
STOP_EN = frozenset(_STOP_WORDS.split())
STOP_ZH = frozenset(
    {
        "什么",
        "哪个",
        "哪儿",
        "为什么",
        "可能",
        "会不",
        "的那",
        "那个",
        "个人",
        "的人",
        "朋友",
        "还记",
        "记得",
        "得吗",
        "我忘",
        "忘了",
        "现在",
        "后来",
        "一个",
        "他们",
        "我们",
        "你们",
        "是不",
        "不是",
    }
)


def content_units(text: str, lang: str) -> set[str]:
    """The content words of a text, compared between a question and its evidence: English word stems
    (first five letters) minus function words; Chinese CJK bigrams minus function bigrams."""
    if lang == "en":
        words = re.findall(r"[a-z]+", text.lower())
        return {w[:5] for w in words if w not in STOP_EN and len(w) > 2}
    grams = set()
    for run in re.findall(r"[\u4e00-\u9fff]+", text):
        grams |= {run[i : i + 2] for i in range(len(run) - 1)}
    return grams - STOP_ZH


def _person_forms(lang: str, speaker_is_owner: bool, male: bool) -> dict[str, str]:
    """The pronouns a turn about the question's owner uses: the owner speaking, or the other one."""
    if lang == "zh":
        me = "我" if speaker_is_owner else "你"
        return {"I": me, "me": me, "my": me + "的", "was": "", "X_pos": "他的" if male else "她的"}
    if speaker_is_owner:
        return {"I": "I", "me": "me", "my": "my", "was": "was", "X_pos": "his" if male else "her"}
    return {"I": "you", "me": "you", "my": "your", "was": "were", "X_pos": "his" if male else "her"}


def conversation(lang: str, n: int, rng: random.Random) -> dict:
    """One conversation: sessions of filler, evidence turns and decoys; and its questions."""
    pool = EN if lang == "en" else ZH
    a, b = pool["pairs"][n]
    conv_id = f"hard-{lang}-{n:02d}"
    sessions: list[list[tuple[str, str, str | None]]] = [[] for _ in range(SESSIONS)]  # (speaker, text, tag)
    people = rng.sample(pool["people"], 11)
    used_values: set[str] = set()
    # the tuning half (even conversations) and the held-out half draw on disjoint acts and traits:
    # tuning on one half cannot learn the other's phrasings
    half = n % 2
    acts = rng.sample(pool["acts"][half::2], 8)
    questions = []

    def place(session: int, speaker: str, text: str, tag: str | None) -> None:
        sessions[session].append((speaker, text, tag))

    def act_turns(act, x: str) -> tuple[str, str, str]:
        """(who says the act's turn, how the question describes the actor, the turn)."""
        owner, speaker = rng.choice((a, b)), rng.choice((a, b))
        forms = _person_forms(lang, speaker == owner, male(x))
        return speaker, rng.choice(pool["desc"]).format(a=act[0].format(o=owner)), act[1].format(X=x, **forms)

    def male(name: str) -> bool:
        return name in pool["people"][1::2]  # the pools alternate women and men

    for k in range(8):  # 5 two-hop, 3 three-hop
        turns, q, value = _draw_chain(
            pool, lang, rng, (a, b), acts[k], people[k], people[3 + k] if k >= 5 else None, used_values, act_turns, male
        )
        used_values.add(value)
        tag = f"q{k}"
        for session, (speaker, text) in zip(sorted(rng.sample(range(SESSIONS), len(turns))), turns, strict=True):
            place(session, speaker, text, tag)
        for decoy in (acts[k][2], next(at[3] for at in pool["attrs"] if value in at[2])):  # the question's words
            place(rng.randrange(SESSIONS), rng.choice((a, b)), decoy, None)
        questions.append(
            {"tag": tag, "question": q, "answer": value, "category": "multi-hop-3" if len(turns) == 3 else "multi-hop"}
        )

    for k, trait in enumerate(rng.sample(pool["inference"][half::2], 6)):
        who = rng.choice((a, b))
        tag = f"q{8 + k}"
        for _ in range(50):
            variant = rng.randrange(len(trait["questions"]))
            evidence, question = rng.sample(trait["evidence"], 2), trait["questions"][variant].format(n=who)
            if not _shared(question, evidence, lang):
                break
        else:
            raise ValueError(f"no disjoint phrasing for {trait['answer']!r}")
        for session, text in zip(sorted(rng.sample(range(SESSIONS), 2)), evidence, strict=True):
            place(session, who, text, tag)
        place(rng.randrange(SESSIONS), a if who == b else b, trait["decoys"][variant], None)
        questions.append({"tag": tag, "question": question, "answer": trait["answer"], "category": "inference"})

    return _assemble(conv_id, lang, n, a, b, sessions, questions, pool, rng)


def _shared(question: str, evidence: list[str], lang: str) -> set[str]:
    return content_units(question, lang) & set().union(*(content_units(t, lang) for t in evidence))


def _draw_chain(
    pool, lang, rng, pair, act, x, y, used_values, act_turns, male
) -> tuple[list[tuple[str, str]], str, str]:
    """One multi-hop chain (two turns, three with a relative ``y``) and its question, redrawn until
    the question shares no content word with its evidence turns."""
    for _ in range(50):
        attr = rng.choice(pool["attrs"])
        value = rng.choice([v for v in attr[2] if v not in used_values])
        speaker, desc, turn1 = act_turns(act, x)
        turns = [(speaker, _sentence(turn1, lang))]
        if y:
            rel_q, rel_t = rng.choice(pool["relations"])
            forms = _person_forms(lang, True, male(x))
            relation = pool["relation_turn"].format(X=x, Y=y, rel=rel_t, **forms)
            turns.append((rng.choice(pair), _sentence(relation, lang)))
            desc = f"the {rel_q} of {desc}" if lang == "en" else f"{desc}的{rel_q}"
        turns.append((rng.choice(pair), _sentence(attr[1].format(X=y or x, v=value), lang)))
        asked = attr[0].format(d=desc)
        q = rng.choice(pool["multi_hop_q"]).format(q=asked, ql=asked[0].lower() + asked[1:])
        if not _shared(q, [t for _, t in turns], lang):
            return turns, q, value
    raise ValueError(f"no disjoint phrasing for {act[0]!r}")


def _sentence(text: str, lang: str) -> str:
    text = text.strip()
    if lang == "en":
        return text[0].upper() + text[1:] + ("" if text[-1] in ".!?" else ".")
    return text if text[-1] in "。！？" else text + "。"


def _assemble(conv_id, lang, n, a, b, sessions, questions, pool, rng) -> dict:
    """Interleaves filler around the placed turns, numbers turns and sessions, dates the sessions,
    and resolves each question's evidence to turn ids."""
    start = date(2023, 1, 1) + timedelta(days=rng.randrange(700))
    out_sessions, evidence = [], {q["tag"]: [] for q in questions}
    day = start
    for s, placed in enumerate(sessions):
        day += timedelta(days=rng.randrange(3, 21))
        turns = [(rng.choice((a, b)), f, None) for f in rng.sample(pool["filler"], rng.randrange(6, 11))]
        for item in placed:
            turns.insert(rng.randrange(len(turns) + 1), item)
        rows = []
        for t, (speaker, text, tag) in enumerate(turns):
            turn_id = f"{conv_id}-s{s:02d}-t{t:02d}"
            rows.append({"turn_id": turn_id, "speaker": speaker, "text": text})
            if tag:
                evidence[tag].append(turn_id)
        out_sessions.append({"session_id": f"{conv_id}-s{s:02d}", "date": day.isoformat(), "turns": rows})
    texts = {t["turn_id"]: t["text"] for s in out_sessions for t in s["turns"]}
    qs = []
    for i, q in enumerate(questions):
        shared = content_units(q["question"], lang) & set().union(
            *(content_units(texts[e], lang) for e in evidence[q["tag"]])
        )
        if shared:
            raise ValueError(f"{conv_id} q{i} {q['question']!r} shares {sorted(shared)} with its evidence")
        if len({e.rsplit("-t", 1)[0] for e in evidence[q["tag"]]}) < 2:
            raise ValueError(f"{conv_id} q{i}: evidence in one session")
        qs.append(
            {
                "qid": f"{conv_id}-q{i:02d}",
                "question": q["question"],
                "answer": q["answer"],
                "evidence": evidence[q["tag"]],
                "category": q["category"],
            }
        )
    return {
        "conv_id": conv_id,
        "lang": lang,
        "tuning": n % 2 == 0,
        "speakers": [a, b],
        "sessions": out_sessions,
        "questions": qs,
    }


def generate(lang: str, seed: int = 30) -> list[dict]:
    rng = random.Random(f"{seed}-{lang}")
    return [conversation(lang, n, rng) for n in range(CONVERSATIONS)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if the committed files differ from a regeneration")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    stale = []
    for lang in ("en", "zh"):
        path = OUT / f"hard-{lang}.json"
        doc = (
            json.dumps(
                {"name": f"hard-{lang}", "generator": "bench/hardconv.py", "conversations": generate(lang)},
                ensure_ascii=False,
                indent=1,
            )
            + "\n"
        )
        if args.check:
            stale += [] if path.exists() and path.read_text("utf-8") == doc else [path.name]
        else:
            path.write_text(doc, "utf-8")
            convs = json.loads(doc)["conversations"]
            print(
                f"{path.name}: {len(convs)} conversations, {sum(len(c['questions']) for c in convs)} questions, "
                f"{sum(len(s['turns']) for c in convs for s in c['sessions'])} turns"
            )
    if stale:
        sys.exit(f"stale: {stale} (run python bench/hardconv.py)")


if __name__ == "__main__":
    main()
