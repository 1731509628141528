#!/usr/bin/env python3
"""ConvMem: a synthetic conversational-evidence benchmark in English and Chinese.

What it is
    A deterministic generator of long two-person chats in the style of LoCoMo.  Each conversation
    runs over 15-25 dated sessions of 20-35 turns (about 400-650 turns).  Each speaker has a persona
    (job, city, pets, family, instrument, food, car, trips, purchases, events, problems,
    achievements, plans...); life events are told in specific turns, in the first person, in varied
    wording and often with a relative time ("last Saturday", "two weeks ago", "上周末", "前天"), and
    some facts change later (a move, a new job, a new diet, a new car, a break-up).  Questions name
    the person and point at those turns as evidence.  Most turns are filler (greetings, weather,
    shows, reactions, follow-ups), and both speakers talk about the same kinds of things, so who
    said it matters.  The Chinese set is written independently, not translated.

    It is synthetic: every name, template and word list lives in this file.  It was written
    without looking at the retrieval product it evaluates, so it cannot have been bent to suit it.
    Licensed with the repository (Apache-2.0).  Standard library only, no network.

Schema: generate(lang="en"|"zh", conversations=10, seed=0) returns a list of
    {"conv_id": "en-03", "lang": "en", "speakers": ["Maya", "Daniel"],
     "sessions": [{"session_id": "en-03-s01", "date": "2023-05-14T18:30:00",
                   "turns": [{"turn_id": "en-03-s01-t007", "speaker": "Maya", "text": "..."}]}],
     "questions": [{"qid": "en-03-q012", "question": "...", "category": "temporal",
                    "evidence": ["en-03-s04-t011"], "answer": "..."}]}
    Dates are naive ISO timestamps, ascending, days or weeks apart.  An event told with a relative
    time happened on the session date minus the offset; a temporal answer is that date, or the
    weekend / week / month / approximate date the phrase implies ("the weekend of 6-7 May 2023").
    "last Saturday" / "上周末" are only used in sessions held Monday to Friday, where they are
    unambiguous.  Events told vaguely ("recently", "前阵子") are never asked about by date.

Question categories (about 35 / 25 / 15 / 15 / 10 %, 120-190 questions per conversation)
    single-hop  one fact, asked with a paraphrase of the evidence turn.
    temporal    when did P do X; what did P do in <month>; how long between two of P's events;
                which of two came first.  Evidence: the turn(s) telling the event(s).
    multi-hop   needs two or more turns, often sessions apart: the sister is named in one turn and
                her city in another; which pet came first; what both speakers do at weekends; which
                city P lived in when an event happened...
    speaker     names a person on a topic both speakers talked about with different answers (both
                have a dog, both play an instrument), so the other speaker's turn is a near miss.
    update      a fact that changed: asks for the current value ("Where does P live now?", "Is P
                still with X?"); evidence is the latest statement, plus the earlier one only when
                the question needs it ("Where did P live before moving to X?").

Data format in this file
    Word lists and templates are BLOCK strings: "key= item|item|key2= item" ("~" joins the parts of
    a tuple; a line indented by four spaces continues the item before it).  Filler exchanges are
    one per line, turns joined by "||".  Templates use str.format slots; {xC} is {x} capitalised.

Run
    python bench/convmem.py --lang en --stats
    python bench/convmem.py --lang zh --dump 0          # first 2 sessions and 10 questions, with evidence
    python bench/convmem.py --lang en --conversations 10 --seed 0 --out convmem_en.json
    >>> from convmem import generate; data = generate(lang="zh", conversations=10, seed=0)
"""
import argparse
import datetime as dt
import json
import random
import sys

CATS = ("single-hop", "temporal", "multi-hop", "speaker", "update")
SHARE = {"single-hop": .35, "temporal": .25, "multi-hop": .15, "speaker": .15, "update": .10}


def S(s):
    """'a|b|c' -> ['a', 'b', 'c']; an item 'x~y' becomes the tuple ('x', 'y')."""
    return [tuple(p.strip() for p in x.split("~")) if "~" in x else x for x in (y.strip() for y in s.split("|")) if x]


def BLOCK(s):
    """'key= a|b|key2= c': items split on | and newlines, 'key= ' starts a list; 4-space indent continues an item."""
    out, key = {}, None
    for raw in s.replace("\n    ", " ").replace("\n", "|").split("|"):
        if not raw.strip():
            continue
        k, sep, rest = raw.partition("= ")
        if sep and k.strip().isidentifier():
            key, raw = k.strip(), rest
        out.setdefault(key, []).extend(S(raw))
    return out


def LINES(s):
    return [x.strip().split("||") for x in s.strip().splitlines() if x.strip()]


def cap(s):
    return s[:1].upper() + s[1:]


def fmt(tpl, **slots):
    """str.format, where every string slot `x` also exists capitalised as `xC`."""
    d = dict(slots)
    d.update({k + "C": cap(v) for k, v in slots.items() if isinstance(v, str)})
    return tpl.format(**d)


# ============================================================== 1. vocabularies ("~" joins a tuple)
V = {"en": BLOCK("""
names= Maya~f|Daniel~m|Priya~f|Marcus~m|Sofia~f|Ethan~m|Aisha~f|Liam~m|Chloe~f|Mateo~m|Hannah~f|Omar~m|Grace~f|Noah~m
  Leila~f|Julian~m|Zoe~f|Kenji~m|Nora~f|Samuel~m|Isabel~f|Theo~m|Fatima~f|Lucas~m|Ingrid~f|Diego~m|Ruby~f|Malik~m
  Clara~f|Felix~m|Amara~f|Henry~m|Yuki~f|Oscar~m|Elena~f|Tariq~m|Harper~f|Caleb~m|Naomi~f|Jonah~m|Bianca~f|Andre~m
kin_f= Tessa|Rosa|Imogen|Lena|Marisol|Dana|Keiko|Beatrice|Freya|Anya|Lucia|Mira
kin_m= Ravi|Connor|Tobias|Emeka|Hugo|Sean|Arjun|Milo|Pablo|Gideon|Wes|Rohan
partners= Jordan|Alex|Sam|Riley|Casey|Morgan|Jamie|Avery|Quinn|Robin|Charlie|Devon|rels= sister~f|brother~m|cousin~x
spro= she|he|petpro= he~him|she~her
pets= dog~puppy|cat~kitten|rabbit~bunny|parrot~parrot|hamster~hamster|tortoise~tortoise|guinea pig~guinea pig
petnames= Biscuit|Mochi|Pepper|Luna|Ziggy|Olive|Waffles|Pickles|Nori|Bean|Clementine|Otis|Juniper|Pip|Noodle|Maple
  Turnip|Kiwi|Sprout|Dumpling|nums= two|three|four|five|six|seven|eight
jobs= a nurse~St. Mary's Hospital|a software engineer~a fintech startup downtown|a chemistry teacher~Lincoln High
  a chef~a tapas bar on Fifth Street|a graphic designer~a small ad agency|an accountant~Harper & Cole
  a physiotherapist~a sports injury clinic|a librarian~the central library|an architect~a tiny design studio
  a paramedic~the county ambulance service|a data analyst~an insurance company|a vet~an animal hospital
  a journalist~the local newspaper|a pharmacist~a neighbourhood pharmacy
cities= Portland|Denver|Austin|Chicago|Boston|Seattle|Toronto|Manchester|Edinburgh|Melbourne|Vancouver|Minneapolis
  Atlanta|Dublin|San Diego|Pittsburgh
grewup= Cork|Leeds|Adelaide|Halifax|Boise|Asheville|Galway|Dundee|Tucson|Saskatoon
trips= Iceland~see the northern lights~we stood in a freezing field at 2am while the aurora danced overhead
  Lisbon~ride the old trams~I rode those rickety yellow trams up and down the hills every single day
  Kyoto~walk through the bamboo forest~the bamboo grove at dawn was so quiet it felt unreal
  Bali~learn to surf~I had surf lessons every morning and wiped out about a hundred times
  the Grand Canyon~hike down to the river~we hiked all the way down to the Colorado and back in one brutal day
  Mexico City~eat street tacos~I basically lived on tacos al pastor from street stands
  the Scottish Highlands~go hillwalking~we spent four days tramping over misty hills with sheep for company
  Vancouver Island~go whale watching~a pod of orcas surfaced right next to our boat
  Rome~take a pasta-making class~a tiny Italian grandmother taught us to roll fresh pasta by hand
  New Orleans~hear live jazz~there was live jazz spilling out of every bar on Frenchmen Street
  Banff~go canoeing on a glacier lake~we paddled across a lake so turquoise it looked photoshopped
  Marrakech~shop in the souks~I got gloriously lost in the souks haggling over a rug
  Cape Town~see penguins~the penguins on Boulders Beach waddled right past our feet
  Seoul~eat Korean barbecue~we had Korean barbecue every single night and regret nothing
trip_generic= it was even better than the photos
concert= Coldplay|Hozier|Lizzo|Arctic Monkeys|Mumford & Sons|Norah Jones|Bon Iver|Phoebe Bridgers|The Killers
  Florence + the Machine|Vampire Weekend|Stevie Nicks
race= the Chicago Marathon|the Brooklyn Half|a 10K charity run|a 50K trail ultra|the Berlin Marathon
  a sprint triathlon|the Great North Run
workshop= a sourdough baking workshop|a woodworking workshop|a creative writing workshop|a watercolour workshop
  a public speaking workshop|a first-aid course|a beekeeping workshop
group= a grief support group|an anxiety support group|a support group for caregivers
  a support group for people quitting smoking|a support group for people going through divorce
festival= a jazz festival|a lantern festival|a food truck festival|a film festival|a folk music festival
  a chilli festival
buys= a secondhand road bike~bike|an electric scooter~bike|an espresso machine~kitchen|a stand mixer~kitchen
  an air fryer~kitchen|a vintage film camera~camera|a mirrorless camera~camera|a two-person tent~outdoor
  an inflatable kayak~outdoor|a standing desk~home|a robot vacuum~home|an e-reader~gadget|a smartwatch~gadget
buyq= bike~What did {P} buy to get around town?|bike~What did {P} get for {poss} commute?
  kitchen~What did {P} buy for the kitchen?|kitchen~What kitchen gadget did {P} treat {refl} to?
  camera~What camera did {P} buy?|camera~What did {P} buy for taking photos?|outdoor~What outdoor gear did {P} buy?
  home~What did {P} buy for {poss} home?|gadget~What gadget did {P} buy?
problems= car~my {car} broke down on the highway {t} and had to be towed~What happened to {P}'s car?~It broke down on
    the highway and had to be towed.~have {poss} car break down~had {poss} car break down
  keys~I lost my keys {t} and waited two hours for a locksmith~What did {P} lose?~{poss} keys~lose {poss} keys~lost
    {poss} keys
  phone~I dropped my phone in the sink {t} and it's completely dead~What happened to {P}'s phone?~It fell in the sink
    and stopped working.~drop {poss} phone in the sink~dropped {poss} phone in the sink
  leak~a pipe burst under my kitchen sink {t} and flooded the floor~What went wrong in {P}'s kitchen?~A pipe burst and
    flooded the floor.~have a pipe burst at home~had a pipe burst in {poss} kitchen
  ankle~I sprained my ankle playing five-a-side football {t}~What injury did {P} get?~A sprained ankle, from playing
    five-a-side football.~sprain {poss} ankle~sprained {poss} ankle
  wallet~someone stole my wallet on the bus {t}~What was stolen from {P}?~{poss} wallet~have {poss} wallet stolen~had
    {poss} wallet stolen on the bus
achieve= promo~I got promoted to team lead {t}~What promotion did {P} get?~team lead~get promoted to team lead~got
    promoted to team lead
  exam~I passed my driving test {t}, first try~What test did {P} pass?~{poss} driving test~pass {poss} driving
    test~passed {poss} driving test
  exam~I passed the B2 Spanish exam {t}~Which language exam did {P} pass?~the B2 Spanish exam~pass the B2 Spanish
    exam~passed the B2 Spanish exam
  win~I won a local chess tournament {t}~What competition did {P} win?~a local chess tournament~win a local chess
    tournament~won a local chess tournament
  win~my team won the pub quiz league {t}~What did {P}'s team win?~the pub quiz league~win the pub quiz league~won the
    pub quiz league with {poss} team
  pub~a literary magazine accepted my short story {t}~What piece of {P}'s writing got published?~a short story, in a
    literary magazine~get a short story accepted~had a short story accepted by a literary magazine
  pub~one of my photos was picked for a gallery show {t}~Which of {P}'s work was chosen for a gallery show?~one of
    {poss} photos~get a photo into a gallery show~had a photo picked for a gallery show
classes= pottery~a beginners' pottery class|rock climbing~an intro to rock climbing course
  salsa dancing~salsa dancing lessons|photography~an evening photography course
  Italian~Italian lessons at the community college|improv~an improv class|swimming~adult swimming lessons
  archery~an archery club|calligraphy~a calligraphy class
newhobby= bouldering|tennis|birdwatching|paddleboarding|trail running|skateboarding
inst= cello|violin|ukulele|piano|double bass|saxophone|banjo|guitar|trumpet|flute|harp
allergy= peanuts|shellfish|sesame|strawberries|walnuts|eggs|fear= heights|spiders|deep water|flying|clowns|the dentist
team= the Chicago Cubs|Arsenal|the Boston Celtics|Liverpool|the Toronto Raptors|the Green Bay Packers|Celtic
comps= {my} mum|{my} college roommate|two old school friends|{my} sister-in-law|a friend from work|{my} dad
tongue= Portuguese|Tagalog|Polish|Farsi|Greek|Swahili|Vietnamese
drink= three coffees|a double espresso|a huge mug of black coffee
newdrink= green tea|herbal tea|hot water with lemon|a matcha latte
foods= steak~meat|Korean fried chicken~meat|pulled pork sandwiches~meat|sushi~fish|fish tacos~fish
  mac and cheese~dairy|pizza~dairy|chocolate cake~sugar|cinnamon rolls~sugar
diets= meat~vegetarian|fish~vegetarian|dairy~vegan|sugar~sugar-free
cars= Honda Civic|Toyota Corolla|Ford Fiesta|VW Golf|Subaru Outback|Mazda 3|Kia Niro|Tesla Model 3|Jeep Wrangler
  Volvo XC40
meets= at a friend's barbecue|on a dating app|at the climbing gym|in a book club|at a wedding
  in the queue at a coffee shop
weekend= hiking~out hiking in the hills|volunteering at an animal shelter~volunteering at the animal shelter
  going to the farmers' market~wandering around the farmers' market|cycling~out on my bike along the river
  yoga~doing yoga in the park
plans= walk the Camino de Santiago|take a sabbatical to learn Japanese|renovate {my} kitchen
  go back to school for a master's|throw {my} parents a surprise anniversary party|learn to scuba dive
  hike the Inca Trail|open a little online shop for {my} prints|whens= next spring|next summer|next year
vet= an ear infection|a sprained paw|a cracked tooth|a stomach bug|an eye infection|an allergy to the new food
shows= Severance|The Bear|Succession|Ted Lasso|Slow Horses|The Last of Us|Abbott Elementary
books= Project Hail Mary|Klara and the Sun|Pachinko|The Midnight Library|Tomorrow, and Tomorrow, and Tomorrow
dishes= shakshuka|a mushroom risotto|chicken curry|homemade dumplings|lentil soup|a veggie stir-fry|banana bread
podcasts= Radiolab|This American Life|Hidden Brain|99% Invisible|Freakonomics Radio
errands= the post office|the bank|groceries|the pharmacy|picking up dry cleaning|returning a parcel
days= Thursday|Wednesday|Friday|the end of the month
months= January|February|March|April|May|June|July|August|September|October|November|December
numw= zero|one|two|three|four|five
"""), "zh": BLOCK("""
names= 林晓雯~f|陈浩~m|王思琪~f|张伟~m|李欣然~f|刘洋~m|赵雨桐~f|孙磊~m|周佳怡~f|吴俊杰~m|郑静~f|黄子轩~m|何梦瑶~f
  许文博~m|高婷婷~f|马骏~m|杨柳~f|罗志远~m|谢雨萱~f|唐凯~m|韩雪~f|冯宇航~m|宋佳~f|曹明轩~m|彭丽~f|邓超然~m|沈念~f
  蒋一鸣~m|姚琳~f|陆子昂~m|范晓燕~f|程远~m|袁梦~f|邵阳~m|苏晴~f|贺铭~m|叶知秋~f|潘越~m|田甜~f|董立~m|徐可~f|江河~m
kin_f= 嘉怡|子涵|佳琪|若曦|诗涵|雨欣|梓萌|可馨|kin_m= 思远|一凡|浩然|明哲|俊熙|宇轩|子墨|天佑
partners= 阿杰|小雨|子豪|思思|大伟|佳佳|阿澈|乐乐|小北|安安|阿宁|晨晨|rels= 姐姐~f|妹妹~f|哥哥~m|弟弟~m|表姐~f|表哥~m
spro= 她|他|petpro= 它~它|pets= 狗~小狗|猫~小猫|兔子~小兔子|鹦鹉~鹦鹉|仓鼠~仓鼠|乌龟~小乌龟|荷兰猪~荷兰猪
petnames= 团子|饼干|豆豆|年糕|可乐|旺财|花卷|布丁|芝麻|橘子|毛球|小七|汤圆|雪球|土豆|大福|肉松|桂圆
nums= 两|三|四|五|六|七|八
jobs= 护士~市第一人民医院|程序员~星河支付|化学老师~市实验中学|厨师~蜀香园川菜馆|平面设计师~蓝橙广告公司
  会计~恒信会计师事务所|康复治疗师~动力运动康复中心|图书管理员~市图书馆|建筑师~木石设计工作室|急诊科医生~区人民医院
  数据分析师~安泰保险|宠物医生~萌宠宠物医院|记者~都市晚报社|药剂师~仁心大药房
cities= 杭州|成都|武汉|南京|西安|厦门|重庆|长沙|青岛|苏州|深圳|广州|昆明|天津|大连|合肥
grewup= 绍兴|洛阳|泉州|扬州|潮州|开封|烟台|自贡
trips= 哈尔滨~看冰雕~冰雪大世界的冰灯晚上一亮起来太震撼了|大理~骑行环洱海~我们租了电动车沿着洱海骑了一整天
  成都~看大熊猫~在基地看到熊猫抱着竹子啃，萌化了|厦门~逛鼓浪屿~在鼓浪屿的小巷子里转了一下午
  西安~爬华山~半夜开始爬华山，在山顶等到了日出|三亚~学冲浪~每天早上上冲浪课，摔了无数次
  桂林~坐竹筏游漓江~竹筏漂在漓江上，两边的山跟水墨画一样|敦煌~看莫高窟~莫高窟的壁画近看真的让人说不出话
  张家界~走玻璃栈道~走玻璃栈道的时候我腿都软了|新疆~自驾独库公路~我们自驾走了一段独库公路，风景绝了
  东京~看樱花~上野公园的樱花正好开满|曼谷~逛夜市~天天泡在夜市吃芒果糯米饭
  青海~环青海湖~我们沿着青海湖转了一圈，湖水蓝得不真实|景德镇~学拉坯~跟老师傅学拉坯，手上全是泥
trip_generic= 比照片上还要美|concert= 周杰伦|五月天|陈奕迅|李健|毛不易|新裤子|张惠妹|朴树|邓紫棋|万能青年旅店
race= 北京马拉松|上海半程马拉松|一场十公里公益跑|一场五十公里越野赛|厦门马拉松|一场短距离铁人三项
workshop= 手冲咖啡工作坊|木工体验课|写作工作坊|水彩画工作坊|演讲训练营|急救培训|烘焙工作坊
group= 焦虑症互助小组|失亲者互助会|照护者互助小组|戒烟互助小组|离婚互助小组
festival= 美食节|草莓音乐节|元宵灯会|电影节|啤酒节|风筝节
buys= 一辆~二手公路车~bike|一台~电动滑板车~bike|一台~意式咖啡机~kitchen|一台~厨师机~kitchen|一个~空气炸锅~kitchen
  一台~胶片相机~camera|一台~微单相机~camera|一顶~双人帐篷~outdoor|一个~充气皮划艇~outdoor|一张~升降桌~home
  一台~扫地机器人~home|一个~电子阅读器~gadget|一块~运动手表~gadget
buyq= bike~{P}买了什么代步工具？|bike~{P}为了通勤添置了什么？|kitchen~{P}给厨房添了什么新电器？
  kitchen~{P}最近买了什么厨房小家电？|camera~{P}入手了什么相机？|camera~{P}为了拍照买了什么？
  outdoor~{P}为了户外活动买了什么装备？|home~{P}给家里添置了什么？|gadget~{P}买了什么电子产品？
problems= car~我那辆{car}{t}在高速上抛锚了，最后只能叫拖车~{P}的车出了什么状况？~在高速上抛锚了，叫了拖车~遇上车子抛锚
    ~车在高速上抛锚了|keys~我{t}把钥匙弄丢了，在门口等了两个小时开锁师傅~{P}丢了什么东西？~钥匙~弄丢钥匙~把钥匙弄丢了
  phone~我{t}把手机掉进水池里了，直接开不了机~{P}的手机怎么了？~掉进水池里，开不了机了~把手机掉进水池~
    把手机掉进水池弄坏了
  leak~家里厨房的水管{t}爆了，地上全是水~{P}家厨房出了什么事？~水管爆了，厨房被淹~遇上家里水管爆裂~家里厨房水管爆了
  ankle~我{t}打羽毛球把脚踝扭了~{P}受了什么伤？~打羽毛球时扭伤了脚踝~扭伤脚踝~打羽毛球扭伤了脚踝
  wallet~我{t}在地铁上钱包被偷了~{P}在地铁上丢了什么？~钱包（被偷了）~被偷钱包~在地铁上被偷了钱包
achieve= promo~我{t}升职了，现在是组长啦~{P}升到了什么职位？~组长~升职当组长~升职当了组长
  exam~我{t}拿到驾照了，科目三一把过~{P}考下了什么证？~驾照~拿到驾照~考下了驾照
  exam~我{t}收到成绩，日语N2过了~{P}考过了哪个语言考试？~日语N2~考过日语N2~考过了日语N2
  win~我们队{t}拿了公司羽毛球赛的冠军~{P}和队友赢了什么比赛？~公司羽毛球赛冠军~拿下公司羽毛球赛冠军~
    和队友拿了公司羽毛球赛冠军
  win~我{t}在市里的象棋比赛拿了第一~{P}在什么比赛里拿了第一？~市里的象棋比赛~拿下象棋比赛第一~在市象棋比赛拿了第一
  pub~我写的短篇小说{t}被一本文学杂志录用了~{P}的什么作品被杂志录用了？~一篇短篇小说~收到小说录用通知~
    写的短篇小说被文学杂志录用了
  pub~我拍的一张照片{t}入选了摄影展~{P}的什么作品入选了展览？~一张照片（入选了摄影展）~收到照片入选摄影展的消息~
    拍的照片入选了摄影展
classes= 陶艺~陶艺班|攀岩~攀岩入门课|拉丁舞~拉丁舞课|摄影~摄影夜校|游泳~成人游泳班|书法~书法班|射箭~射箭俱乐部
  即兴喜剧~即兴喜剧班|newhobby= 打飞盘|打网球|观鸟|玩桨板|钓鱼|玩滑板
inst= 钢琴|吉他|大提琴|小提琴|古筝|尤克里里|架子鼓|萨克斯|二胡|长笛|allergy= 花生|芒果|海鲜|青霉素|花粉|桃子
fear= 恐高|怕蜘蛛|怕水|怕坐飞机|怕打针|怕黑|team= 广州队|北京国安|上海申花|山东泰山|湖人队|勇士队|成都蓉城|浙江队
comps= 我妈|大学室友|两个发小|表妹|公司同事|我爸|tongue= 粤语|闽南话|上海话|四川话|客家话|温州话
drink= 一大杯美式|两杯咖啡|一杯浓缩咖啡|newdrink= 绿茶|花草茶|温柠檬水|抹茶拿铁
foods= 红烧肉~meat|烤串~meat|北京烤鸭~meat|火锅~spicy|小龙虾~spicy|螺蛳粉~spicy|酸菜鱼~spicy|麻辣烫~spicy|奶茶~sugar
  提拉米苏~sugar|diets= meat~吃素|spicy~戒辣|sugar~戒糖
cars= 比亚迪秦|大众朗逸|丰田卡罗拉|本田思域|五菱宏光MINI|特斯拉Model 3|理想L7|哈弗H6|小鹏P7|宝马3系
meets= 朋友的生日聚会上|一个社交软件上|攀岩馆里|读书会上|一场婚礼上|咖啡店排队的时候
weekend= 爬山~去爬山|逛早市~去逛早市|去救助站做义工~去流浪动物救助站做义工|骑车~沿着江边骑车|瑜伽~在公园练瑜伽
  打羽毛球~约朋友打羽毛球
plans= 走一趟川藏线|去考个潜水证|把厨房重新装修一下|去读个在职研究生|给爸妈办个结婚纪念日惊喜派对|去爬一次四姑娘山
  学会开手动挡|开个小网店卖手作|whens= 明年春天|明年夏天|明年
vet= 耳朵发炎|误吞了一只袜子|腿扭伤了|牙齿裂了|肠胃炎|眼睛感染
shows= 《繁花》|《漫长的季节》|《狂飙》|《三体》|《去有风的地方》|《隐秘的角落》|《请回答1988》|《黑镜》
books= 《活着》|《额尔古纳河右岸》|《置身事内》|《长安的荔枝》|《我与地坛》|《百年孤独》
dishes= 番茄炒蛋|可乐鸡翅|酸辣土豆丝|糖醋里脊|蒜蓉西兰花|葱油拌面|咖喱饭|皮蛋瘦肉粥
podcasts= 《忽左忽右》|《随机波动》|《故事FM》|《东腔西调》|《声东击西》|《不合时宜》
errands= 取快递|交水电费|去银行|买菜|去邮局寄东西|拿干洗的衣服|days= 周四|周五|月底|numw= 零|一|两|三|四|五
""")}
for _v in V.values():
    _v["diets"] = dict(_v["diets"])

# relative times: key -> phrases (windows in _window); lastsat/lastweekend only on Monday-Friday sessions
REL = {"en": BLOCK("""
today= today|this morning|yesterday= yesterday|d2= the day before yesterday|two days ago|d3= three days ago
lastsat= last Saturday|on Saturday|lastweekend= last weekend|over the weekend|this past weekend|lastweek= last week
w2= two weeks ago|a couple of weeks ago|lastmonth= last month|vague= recently|the other day
"""), "zh": BLOCK("""
today= 今天|今天上午|yesterday= 昨天|d2= 前天|d3= 大前天|三天前|lastsat= 上周六|lastweekend= 上周末|lastweek= 上周
w2= 两周前|半个月前|lastmonth= 上个月|vague= 前阵子|前些天
""")}
DEFAULT_REL = "yesterday d2 d3 lastsat lastweekend lastweek w2 lastmonth vague"
ALLOWED_REL = dict(
    job_new="yesterday d2 lastweek w2 lastmonth", move="lastweekend lastweek w2 lastmonth",
    sib_evt="yesterday lastsat lastweekend lastweek w2 lastmonth", diet="lastweek w2 lastmonth",
    partner_end="yesterday d2 lastsat lastweekend lastweek w2", car_new="yesterday d2 lastsat lastweekend lastweek w2",
    problem="today yesterday d2 d3 lastsat lastweek vague", achieve="today yesterday d2 lastweek w2",
    vet="today yesterday d2 d3 lastweek vague", group="yesterday d2 d3 lastweek w2",
    trip="lastweekend lastweek w2 lastmonth vague", trip_with="lastweekend lastweek w2 lastmonth vague",
    cls="yesterday d2 lastsat lastweek w2 lastmonth vague")
DATED = {"adopt", "job_new", "move", "trip", "trip_with", "concert", "race", "workshop", "group", "festival", "buy",
         "problem", "achieve", "cls", "vet", "sib_evt", "diet", "car_new", "partner_end"}
EVENTS = {"concert": "band", "race": "race", "workshop": "ws", "group": "sg", "festival": "fest"}
SIMPLE = (("inst", .85, 6), ("allergy", .5, 12), ("fear", .5, 12), ("grewup", .55, 8), ("team", .45, 14),
          ("tongue", .45, 14))  # kind, p, last session
SENT = dict(problem="neg", vet="neg", group="sup")

# ============================================================== 2. life-event templates
TPL = {"en": BLOCK("""
job= Another long shift at {org} — being {job} is no joke.|I've been {job} at {org} for {n} years now, wow.
  Work at {org} has been wild lately; as {job} there, nothing is ever boring.
  As {job} at {org}, I basically run on coffee and biscuits.
job_new= {tC} was my first day as {job} at {org}!|I started a new job {t} — I'm {job} at {org} now.
  New job alert: I joined {org} as {job} {t}.|I handed in my notice and started at {org} {t}. Officially {job}!
city= I've lived in {city} for {n} years and I still find new spots.|{city} in the evening is my favourite thing here.
  After {n} years in {city}, I finally know which bus is never on time.|Living in {city}, good coffee is never far.
move= We moved to {city} {t}! Boxes everywhere.|{tC} we finally finished moving to {city}. I'm exhausted.
  I'm officially a {city} resident — the move was {t}.|Big change: I packed up everything and moved to {city} {t}.
pet_own= My {kindn} {name} turned {n} this week and still acts like a baby.
  I've had my {kindn} {name} for {n} years now; {ppr}'s basically my roommate.
  My old {kindn} {name} spent the whole afternoon napping in a sunbeam.
  {name}, my {kindn}, has been with me for {n} years and rules the flat.
adopt= Guess what, I finally adopted a {kid} {t} — we named {pobj} {name}!
  {tC} I brought home a little {kid} from the shelter. {name} already runs the house.
  Big news: there's a {kid} in my life now. I picked {pobj} up {t} and {ppr}'s called {name}.
  I caved {t} and adopted a {kid}. Meet {name}!|So I have a new roommate — a {kid} called {name}. Got {pobj} {t}.
vet= Had to rush {name} to the vet {t} — it turned out to be {issue}.
  {tC} I spent hours at the vet with {name}; it was {issue}, poor thing.
  {name} gave me a scare {t}. The vet said it was {issue}.|Vet trip with {name} {t}: {issue}. {pprC}'s on meds now.
sib= My {rel} {sname} keeps sending me memes at 3am.
  Had a long call with my {rel} {sname} tonight, we talked for hours.
  My {rel} {sname} and I used to fight constantly; now {spr}'s my best friend.
  My little {rel} {sname} is obsessed with true crime podcasts lately.
  My older {rel} {sname} always knows what to say when I'm stressed.
sib_city= {sname} just signed a lease in {city} — {spr} loves it there.
  {sname} has finally settled in {city}; {spr} keeps telling me to visit.
  Talked to {sname} — {spr}'s been living in {city} for a few months now and says it feels like home.
sib_evt_married= {sname} got married {t}! I cried through the whole ceremony.
  {tC} was {sname}'s wedding — the best party I've been to in years.
sib_evt_baby= {sname} had a baby girl {t}! I'm officially an {au}.|{tC} {sname} became a parent — a tiny baby boy!
sib_evt_grad= {sname} graduated {t}; I've never been prouder.
  {tC} I watched {sname} walk across the stage at graduation.
inst= I've been practising the {x} every night; my neighbours must hate me.|My {x} teacher finally said I'm improving!
  Spent two hours on scales on the {x} tonight, my fingers are dead.|I dusted off my old {x} and I'm hooked again.
  Thinking of joining a community band, if they'll take a so-so {x} player.
allergy= Fun fact: I'm allergic to {x}, so I read every label twice.
  Being allergic to {x} makes eating out an adventure.|I had a close call with {x} again — this allergy is no joke.
fear= I'm honestly terrified of {x}; always have been.|You know I'm scared of {x}, right? It's embarrassing.
  My biggest fear? {xC}. No question.
team= I've supported {x} since I was a kid — it's been mostly heartbreak.
  Watching {x} lose again tonight. Why do I do this to myself?|My new {x} jersey arrived; wearing it to the next game.
tongue= My grandmother only ever spoke {x} to me, so it's basically my second language.
  I grew up speaking {x} at home and English at school.|Whenever I call home I slip straight back into {x}.
grewup= I grew up in a little town outside {x}; everyone knew everyone.
  Growing up near {x}, summers were all lakes and bikes.|When I'm homesick I look up photos of {x}, where I grew up.
birthday= My birthday's on {x} — I'm already dropping hints about cake.
  It's my birthday on {x}, so mark your calendar.
  Every year on {x} I treat myself to a fancy breakfast. Birthday tradition.
drink= I can't function without {x} in the morning.|My mornings run on {x}, no exceptions.
drink_new= I've switched to {x} in the mornings — no more coffee for me.
  Coffee and I are on a break. It's {x} every morning now.
food= Honestly, nothing beats {food}; I could eat it every day.|If I could only eat one thing forever, it'd be {food}.
  My comfort food will always be {food}.|I would cross town for good {food}.
diet_vegetarian= So I went vegetarian {t}. Yes, even no more {food}.|Fun fact: I'm vegetarian now. Started {t}.
  I stopped eating meat {t} — giving vegetarian a proper go.
diet_vegan= I went fully vegan {t}. Goodbye, {food}.|Plot twist: I went vegan {t}, and I'm actually enjoying it.
diet_sugar_free= I quit sugar {t}, so no more {food} for me.
  {tC} I cut out sugar completely. The first days were brutal.
car= My {car} is making that rattling noise again.|I've had my {car} since college and it refuses to die.
  My poor {car} needs new tyres already.|Filling up the {car} costs a fortune these days.
car_new= I finally sold the {car1} — I'm driving a {car2} now!|{tC} I traded in my {car1} for a {car2}. Smells so new.
  New wheels! Said goodbye to the {car1} {t} and picked up a {car2}.
weekend= Weekends I'm usually {ph} — it's the only thing that resets my brain.
  My Saturday routine never changes: {ph}, then a big brunch.|You know me, Sunday mornings I'm {ph}.
  Honestly, the best part of my week is being {ph} on Saturdays.
partner= So... I've been seeing someone. {pname} — we met {meet}.
  I have to tell you about {pname}. We met {meet} and we've been on five dates now.
  Okay, don't laugh, but I'm dating someone: {pname}. We met {meet}.
partner_end_breakup= {pname} and I broke up {t}. It was mutual, but it still stings.
  I should tell you — {pname} and I split up {t}.
partner_end_engaged= {pname} proposed {t}! We're engaged!!|{tC} {pname} got down on one knee. I said yes!
partner_end_movein= {pname} moved in with me {t} — half my closet is gone.
  Big step: {pname} and I moved in together {t}.
trip_with= {tC} I went to {place} with {comp} and {detail}.
  Just back from {place} with {comp}! We went {t} and {detail}.|{compC} and I finally did {place} {t} — {detail}.
trip= {tC} I got back from {place}, and {detail}.|Just back from {place}! Went {t} and {detail}.
  Finally ticked {place} off my bucket list {t} — {detail}.
  Okay, I have to show you photos from {place}. I went {t} and {detail}.
concert= {tC} I finally saw {band} live and screamed myself hoarse.
  I went to the {band} show {t} and I'm still buzzing.|Got last-minute tickets to {band} {t} — best night out in ages.
race= I ran {race} {t}! My legs are destroyed.|{tC} I crossed the finish line at {race}. I nearly cried.
  Did {race} {t} — beat my goal time by four minutes!
workshop= I went to {ws} {t} and loved every minute.|{tC} I tried {ws}. My brain is full.
  Signed up on a whim for {ws} {t} — the teacher was brilliant.
group= {tC} I went to my first meeting of {sg}. It was hard, but I felt less alone.
  I finally went to {sg} {t}. Everyone was so kind.|{tC} I sat in a circle at {sg} and actually talked. Big step.
festival= We went to {fest} {t} and stayed till the very end.|{tC} I spent the whole day at {fest}.
  Dragged my friends to {fest} {t}. Totally worth the crowds.
buy= Treated myself to {item} {t}. No regrets.|{tC} I finally pulled the trigger on {item}.
  Confession: I bought {item} {t}.|I caved and got {item} {t} — should've done it years ago.
problem= Ugh, {core}.|So... {core}. Worst week.|You won't believe this — {core}.|Not my finest moment: {core}.
  {coreC}. I'm still annoyed.
achieve= Guess what — {core}!|Okay, I have news: {core}!|{coreC}! I'm still in shock.|Tiny brag: {core}.
cls= I signed up for {cls} {t} — the first session was humbling.|{tC} I started {cls}. I'm terrible and I love it.
  Remember how I kept saying I'd try {hobby}? I went to my first session of {cls} {t}.
  Had my first go at {cls} {t} and I'm already hooked.
quit= I've stopped going to {hobby}, to be honest — {new} has completely taken over.
  Confession: I quit {hobby}. These days it's all {new}.|I don't really do {hobby} anymore; I got hooked on {new}.
plan= I've made up my mind: {when} I'm going to {act}.|Big goal for {when}: {act}. Saying it out loud so I do it.
  I keep daydreaming about it. {whenC} I want to {act}.|Don't laugh, but the plan for {when} is to {act}.
"""), "zh": BLOCK("""
job= 今天在{org}又加班到九点，当{job}真不容易。|我在{org}当{job}已经{n}年了，有时候也想换换环境。
  作为一个{job}，这阵子在{org}忙得脚不沾地。|我们{org}最近来了个新领导，我这个{job}压力更大了。
job_new= 我{t}正式入职了！现在在{org}当{job}。|跟你说，我换工作了，{t}去{org}报到的，新岗位是{job}。
  {t}是我在{org}做{job}的第一天，紧张得手心冒汗。|终于跳槽成功，{t}开始在{org}上班，做{job}。
city= 我在{city}住了{n}年了，越来越喜欢这座城市。|在{city}生活这么多年，早就习惯这边的口味了。
  我来{city}都{n}年了，还是会在老城区迷路。|住在{city}最大的好处就是周末随便走走都有好吃的。
move= 我们{t}搬到{city}了！家里到处都是纸箱。|{t}终于把家搬到了{city}，累得半死。
  跟你说，我已经搬去{city}了，{t}刚搬完。|{t}正式成为{city}人了，搬家搬到怀疑人生。
pet_own= 我家那只{kindn}{name}都{n}岁了，还是那么能吃。|{name}是我养了{n}年的{kindn}，现在是家里的老大。
  我养的{kindn}{name}今天在窗台上晒了一下午太阳。|说起来我家{kindn}{name}跟了我{n}年了，脾气越来越大。
adopt= 跟你说个好消息，我{t}终于领养了一只{kid}，取名叫{name}！
  我家新添了一位成员——一只{kid}，叫{name}，{t}从救助站接回来的。
  {t}我去朋友家抱了只{kid}回来，我们叫它{name}，可黏人了。|我终于有自己的{kid}啦！{t}接回家的，名字叫{name}。
  说出来你别笑，我{t}一冲动领养了一只{kid}，叫{name}，现在天天围着它转。
vet= {name}{t}去了趟宠物医院，医生说是{issue}。|{t}带{name}去看医生，原来是{issue}，吓死我了。
  别提了，{name}{t}不对劲，送去医院一查是{issue}。|{t}陪{name}在宠物医院待了一下午，是{issue}，好在不严重。
sib= 我{rel}{sname}又在催我找对象，烦死了。|跟我{rel}{sname}视频聊了一个多小时，停不下来。
  我{rel}{sname}从小就比我懂事，什么都让着我。|我{rel}{sname}最近迷上了听悬疑播客，天天给我安利。
  每次我压力大，我{rel}{sname}总能说到我心坎里。
sib_city= {sname}在{city}租到房子了，说那边节奏慢，{spr}特别喜欢。|{sname}已经在{city}定居了，一直喊我过去玩。
  跟{sname}打电话聊了聊，{spr}在{city}住了几个月，说已经把那儿当家了。
sib_evt_married= {sname}{t}结婚了！婚礼上我哭得稀里哗啦。|{t}是{sname}的婚礼，好久没这么开心过了。
sib_evt_baby= {sname}{t}生了个女儿，我们家又多了个小宝贝！|{t}{sname}家添了个小宝宝，是个男孩。
sib_evt_grad= {sname}{t}博士毕业了，我真为{spr}骄傲。|{t}去参加了{sname}的毕业典礼，看{spr}上台我差点哭了。
inst= 最近每天晚上练一小时{x}，邻居估计要烦死我了。|我的{x}老师说我终于有点进步了！
  好久没碰{x}了，这周又捡起来，手生得不行。|为了{x}考级，一首曲子我练了快一个月。|今天练{x}练到手指都疼了。
allergy= 我对{x}过敏，点菜的时候都得先问清楚。|说来好笑，我对{x}过敏，从小就这样。
  上次不小心碰了{x}，过敏又犯了，吓死我。
fear= 我从小就{x}，到现在都没好。|说出来你别笑，我特别{x}。|我最大的弱点就是{x}，没办法。
team= 我从小就是{x}的球迷，伤心的时候比开心的多。|今晚{x}又输了，我为什么要这样折磨自己。
  新买的{x}球衣到了，下次去现场就穿它。
tongue= 我奶奶只跟我说{x}，所以我{x}说得特别溜。|我从小在家说{x}，上学才开始讲普通话。
  一跟家里打电话，我就不自觉地切换成{x}。
grewup= 我是在{x}长大的，小时候天天在河边疯跑。|想家的时候就翻翻{x}的老照片，那是我长大的地方。
  我老家在{x}，从小在那儿长大，一口乡音到现在都没改掉。
birthday= 我生日是{x}，今年想简单过。|{x}是我生日，提前跟你预约祝福哈哈。|每年{x}过生日，我都会给自己买束花。
drink= 我早上不来{x}根本醒不过来。|每天早上全靠{x}续命。
drink_new= 我现在早上改喝{x}了，咖啡戒了。|跟咖啡分手了，现在每天早上一杯{x}。
food= 要说最爱吃的，还得是{food}，一周不吃就想。|心情不好的时候，一顿{food}就能把我治好。
  我这辈子大概是离不开{food}了。|要是只能吃一样东西，我选{food}，毫不犹豫。
diet_吃素= 跟你说个事，我{t}开始吃素了，你别笑。|我现在吃素了，{t}下的决心，连{food}都戒了。
  {t}开始我就不吃肉了，正式加入吃素大军。
diet_戒辣= 医生让我戒辣，{t}开始就再没碰过{food}，太难受了。|我{t}开始戒辣了，胃实在受不了。
  {t}开始我彻底戒辣了，路过{food}店都绕着走。
diet_戒糖= 我{t}开始戒糖了，{food}已经很久没碰了。|{t}下定决心戒糖，现在看到{food}都得忍住。
  我在戒糖，{t}开始的，目前还坚持着。
car= 我那辆{car}又开始异响了。|{car}开了快八年了，还挺皮实。|我的{car}该换轮胎了，又是一笔钱。
  开着我那辆老{car}上班，油价又涨了，心疼。
car_new= 我把{car1}卖了，{t}提了辆{car2}！|终于换车了，旧的{car1}{t}出手了，现在开{car2}。
  {t}去提了新车，{car2}！那辆{car1}跟了我好多年，还有点舍不得。
weekend= 我周末基本都是{ph}，雷打不动。|每个周六早上我都{ph}，不然一周都不得劲。|你知道我的，周日就是{ph}。
  一周里最期待的就是周末{ph}。
partner= 跟你说个秘密，我最近在跟一个人约会，叫{pname}，是在{meet}认识的。
  我得跟你讲讲{pname}，我们是在{meet}认识的，已经见了五六次了。|别笑我啊，我谈恋爱了，对方叫{pname}，在{meet}认识的。
partner_end_breakup= 我和{pname}{t}分手了，和平分手，但心里还是空落落的。|跟你说一声，{pname}和我{t}分开了。
partner_end_engaged= {pname}{t}跟我求婚了！我答应了！|{t}{pname}单膝跪地，我们订婚啦！
partner_end_movein= {pname}{t}搬过来跟我一起住了，衣柜瞬间被占了一半。|{t}我和{pname}正式同居了。
trip_with= 我{t}跟{comp}去了趟{place}，{detail}！|{t}和{comp}一起去了{place}，{detail}。
  {t}拉上{comp}去了{place}，{detail}，太值了。
trip= 我{t}刚从{place}回来，{detail}！|{t}去了趟{place}，{detail}。
  终于把{place}从心愿清单上划掉了！{t}去的，{detail}。|给你看个好东西，{t}在{place}拍的。{detail}，太值了。
concert= 我{t}去看了{band}的演唱会，嗓子都喊哑了！|{t}终于抢到了{band}的票，现场太好哭了。
  {t}在{band}的演唱会上跟着全场大合唱，到现在还很激动。
race= 我{t}跑完了{race}！腿到现在还是酸的。|{t}参加了{race}，冲过终点那一刻差点哭出来。
  {t}去跑了{race}，成绩比预想的好！
workshop= {t}去参加了{ws}，收获比想象的多。|我{t}报名了{ws}，一整天下来脑子满满的。|{t}去上了{ws}，老师特别有意思。
group= 我{t}去参加了{sg}的第一次活动，说出来以后轻松多了。|{t}鼓起勇气去了{sg}，大家都很温柔。
  {t}第一次去{sg}，哭了一场，但感觉被理解了。
festival= {t}去逛了{fest}，吃到走不动。|我{t}去了{fest}，人山人海但很开心。|{t}跟朋友去了{fest}，拍了好多照片。
buy= 我{t}终于下单了{m}{item}，一点都不后悔。|{t}咬咬牙买了{m}{item}，钱包在哭泣。|{t}入手了{m}{item}，早就该买了！
  坦白一下，我{t}买了{m}{item}。
problem= 倒霉透了，{core}。|别提了，{core}。|跟你吐槽一下，{core}，心态崩了。|{core}，真是服了。
achieve= 跟你说个好消息，{core}！|{core}，我到现在都不敢相信！|偷偷炫耀一下：{core}。|有个好消息憋不住了——{core}！
cls= 我{t}报了{cls}，第一节课就被老师夸了。|{t}去上了{cls}的第一节课，比想象中难多了。
  一直说想学{hobby}，{t}终于报了{cls}。|{t}开始上{cls}了，虽然很菜但是好快乐。
quit= {hobby}我已经不去了，现在迷上了{new}。|坦白一下，{hobby}我放弃了，最近周末都用来{new}了。
  说实话我现在很少碰{hobby}了，一有空就去{new}。
plan= 我在琢磨{when}{act}。|给自己定了个目标：{when}{act}，说出来就得做到。|{when}我打算{act}，现在就开始攒钱。
  别笑我，我{when}想{act}。
""")}

# verb forms of dated events: v for "When did P {v}?", p (past) for "What did P do in May?"
FORMS = {"en": BLOCK("""
adopt= adopt {name}~adopted a {kid} named {name}
job_new= start {poss} job at {org}~started a new job as {job} at {org}|move= move to {city}~moved to {city}
trip= go to {place}~went to {place}|trip_with= go to {place}~went to {place} with {comp}
concert= see {band} live~saw {band} live|race= run {race}~ran {race}|workshop= go to {ws}~went to {ws}
festival= go to {fest}~went to {fest}|group= go to {sg} for the first time~went to {sg} for the first time
buy= buy {item}~bought {item}|cls= sign up for {cls}~signed up for {cls}
vet= take {name} to the vet~took {name} to the vet|diet= go {diet}~went {diet}
car_new= get {poss} {car2}~swapped {poss} {car1} for a {car2}
partner_end_breakup= break up with {pname}~broke up with {pname}
partner_end_engaged= get engaged to {pname}~got engaged to {pname}
partner_end_movein= move in with {pname}~moved in with {pname}
"""), "zh": BLOCK("""
adopt= 领养{name}~领养了一只叫{name}的{kid}|job_new= 入职{org}~换了工作，去{org}当{job}
move= 搬到{city}~搬家到了{city}|trip= 去{place}~去{place}旅行|trip_with= 去{place}~和{comp}去{place}旅行
concert= 看{band}的演唱会~去看了{band}的演唱会|race= 跑{race}~跑了{race}|workshop= 参加{ws}~参加了{ws}
group= 第一次去{sg}~第一次参加了{sg}的活动|festival= 去{fest}~去逛了{fest}|buy= 买{item}~买了{m}{item}
cls= 报{cls}~报了{cls}|vet= 带{name}去宠物医院~带{name}去看了宠物医生|diet= 开始{diet}~开始{diet}
car_new= 换成{car2}~把{car1}换成了{car2}|partner_end_breakup= 和{pname}分手~和{pname}分手了
partner_end_engaged= 和{pname}订婚~和{pname}订婚了|partner_end_movein= 和{pname}同居~和{pname}住到了一起
""")}
GERUND = {"run": "running", "get": "getting", "drop": "dropping", "win": "winning", "have": "having", "lose": "losing",
          "move": "moving", "take": "taking", "ride": "riding", "hike": "hiking", "shop": "shopping"}

# ============================================================== 3. filler
CHAT = {"en": BLOCK("""
greet= Yo {o}, how's life?~Can't complain! Well, I could, but I won't.|Hey stranger!~Ha, hi! It's been a minute.
  {o}, you free to chat?~For you, always. What's going on?|Hi hi! How was your day?~Long, but it's over now. Yours?
close= Okay, I'm fading. Let's catch up again soon?~Yes please. Night!|I'll let you go — thanks for the chat!~Anytime!
  Food's ready, gotta go. Talk soon!~Go eat! Bye!|Okay, early start tomorrow. Bye for now!~Sleep well!
pos= Oh wow, congratulations!|That's huge!|Honestly, you deserve this.|Okay, that made my day.|I'm so happy for you!
  Amazing, tell me everything!
neg= Oh no, that's the worst.|Ugh, I'm sorry — that's so annoying.|Yikes. How are you holding up?|Oh no, poor you.
  That's awful luck.|sup= I'm proud of you, honestly.|That's really brave.
dpos= Thanks! It still feels a bit unreal.|Haha thank you, I'm beyond excited.|Thank you! It's been a good week.
dneg= Thanks. I'll survive, I suppose.|It's fine now, just a pain at the time.|Thanks, I needed that.
prompt= Okay, your turn — any news?|How about you, anything exciting?|What's going on in your world?
  And you? How's life?
greet= Hey {o}! How's your week been?~Pretty good, a bit hectic. You?|Hi {o}! Long time no chat.~I know! How are you?
  {o}! Got a minute to catch up?~Always. What's up?|Hey {o}, how are things?~Not bad, just got in from work.
  Hey, you around?~Yep! Just got home.|Hi {o}, hope your day's going well!~It's getting better now. How about yours?
  Evening! How did today treat you?~Honestly? It was a lot. But I'm good now.
  {o}!! I've been meaning to message you all week.~Ha, same! Go on, you first.
close= Anyway, I should get going — talk soon!~Talk soon! Take care.|Okay, dinner's calling. Catch you later!~Enjoy!
  I need to sleep, but this was lovely.~Night! Sleep well.|Right, back to the grind. Talk next week?~Definitely!
  Gotta run, my laundry's been beeping at me for ten minutes.~Ha, go! Talk later.
  This was nice. Let's not leave it so long next time.~Deal. Bye for now!
pos= That's amazing!|No way, congrats!!|Oh I love this for you.|That's so exciting!|Wow, good for you!
  Yay! You deserve it.|That's fantastic news.|Stop, that's brilliant!
neg= Oh no, I'm so sorry.|Ugh, that's awful.|That sounds so stressful.|Oh no! Are you okay?|What a nightmare.
  That's rough, I'm sorry.
sup= That takes real courage.|I'm really glad you went.|Proud of you for doing that.
  That's a big step. How do you feel?
dpos= Thanks! I'm still grinning about it.|I know, I can't quite believe it.|Thank you! I'll send pictures later.
  Honestly, it's been the highlight of my month.
dneg= Yeah. Could've been worse, I suppose.|I'm okay, just annoyed more than anything.|Thanks. Lesson learned.
  It's sorted now, mostly.|dsup= Thanks. It felt good to finally go.|A bit raw, but lighter. Thank you.
prompt= So, what's new with you?|Anyway, enough about me. How are you?|Any news on your side?
  What have you been up to?|Tell me something good.
addon= Sorry, the kettle just boiled.|Anyway!|Wait, that came out wrong, ha.|Sorry, typing on my phone.|Where was I?
  lol
reply= job~Sounds intense! Do you still enjoy it?~Most days, yes. The people make it worth it.
  job~I don't know how you do it.~Lots of coffee, mostly.
  city~I've always wanted to visit properly.~Come! I'll show you around.|city~Ha, every city has its quirks.
  pet_own~Aww, I need a photo immediately.~Sending one now!|pet_own~That's adorable.~Spoiled rotten, honestly.
  sib~Ha, family is the best and the worst.~Exactly that.
  sib~That's lovely. You two sound close.~Closer than ever these days.
  inst~I'd love to hear you play some time.~Give me a few more months, ha.
  inst~So cool. I wish I'd kept up with music.|food~Ha, good choice.~Right? No apologies.
  food~Now I'm hungry, thanks a lot.|car~Cars are money pits, honestly.~Tell me about it.
  car~Hang in there, old faithful!|weekend~That sounds so peaceful.~It really is. Best part of my week.
  weekend~Ha, I love that you have a routine.|plan~Oh, I love that!~Hold me to it, okay?
  plan~That's ambitious. You'll do it.|sib_city~Are you going to visit?~Hopefully soon!
  sib_city~That's great, glad it's working out.|quit~Ha, new obsession unlocked.~You know me.
  partner~Wait, what?! Tell me everything!~Early days, but it's nice.
  diet~Wow, how are you finding it?~Harder than I expected, but good.|diet~Good for you, honestly.
  allergy~That sounds scary. Do you carry an EpiPen?~Always.|allergy~Oof, that must make dinners out tricky.
  fear~Ha, everyone has one.~Mine is just very inconvenient.|grewup~That sounds idyllic.~It was, looking back.
  birthday~Noted! It's going in my calendar.~You'd better!|team~Ha, the loyalty is admirable.~It's a curse, honestly.
  tongue~That's so cool, I'm jealous.~My grammar is shaky!|drink~Ha, same energy.~Don't talk to me before it.
  drink_new~Wow, how's that going?~Headaches for a week, but I'm good now.
follow= adopt~How's the new {kid} settling in?~So well! Already claimed the best spot on the sofa.
  adopt~Any more chaos from the {kid}?~Only a chewed-up charger. We're making progress.
  job_new~How's the new job treating you?~Still learning the ropes, but I really like the team.
  move~Are you all unpacked yet?~Almost! Just the bookshelves left, which I'm avoiding.
  move~How are you finding the new place?~Loving it. The light in the mornings is gorgeous.
  cls~Still going to your classes?~Every week! I'm slowly getting less terrible.
  buy~Getting good use out of your new purchase?~I use it every day. Best money I've spent.
  race~Have your legs recovered yet?~Mostly! Stairs were a nightmare for a few days.
  trip~Have you recovered from your trip?~Sort of. I'm still dreaming about it.
  problem~Did everything get sorted after that mess?~Mostly, yeah. What a week that was.
  partner~How are things going with the new relationship?~Really good, actually. It feels easy.
  car_new~How's the new car?~I keep finding excuses to drive somewhere.
  sib_evt~How's the family after the big event?~Everyone's still on a high, it's lovely.
  achieve~Are you still celebrating?~Ha, a little. I treated myself to cake.
  concert~Still buzzing from the concert?~I've had the setlist on repeat ever since.
"""), "zh": BLOCK("""
greet= 哈喽{o}，最近过得咋样？~还不错，就是有点累。|{o}，有空聊两句吗？~有啊，怎么了？
  嘿，好久不见！~是啊，都快一个月了吧。|今天怎么样？~忙了一整天，刚歇下来。你呢？
close= 不早了，改天再聊！~好，早点休息！|饭好了，我先去吃了～~去吧，拜拜！|明天还要早起，先撤了。~晚安！
  好啦，谢谢你陪我聊天。~客气啥，随时找我。
pos= 哇，太厉害了吧！|这也太好了！|恭喜！真心替你开心！|天哪，快跟我说说细节！|这个消息让我开心了一整天。|好耶！
neg= 天哪，太惨了。|啊，这也太烦人了吧。|心疼你，现在还好吗？|唉，运气也太差了。|听着就头大。
sup= 真的很勇敢。|我为你感到骄傲。|dpos= 谢谢！到现在还觉得有点不真实。|哈哈谢谢，我超开心的。|谢谢！这周心情特别好。
dneg= 谢谢，会好起来的。|现在没事了，就是当时很崩溃。|谢谢你，听你这么说好多了。
prompt= 轮到你了，有啥新鲜事？|你呢？最近过得怎么样？|你那边最近有什么动静？|聊聊你吧，最近怎么样？
greet= {o}！好久没聊了，最近怎么样？~还行吧，就是有点忙。你呢？|在吗{o}？~在呢，刚下班。怎么啦？
  {o}，下班了没？~刚到家，累瘫了。|嗨，今天过得怎么样？~一般般，有点累，不过看到你消息挺开心的。
  {o}！我这周一直想找你聊天。~哈哈我也是，你先说。|晚上好呀，忙完了吗？~忙完了，终于能歇会儿了。
  {o}，最近还好吗？~挺好的！你呢，有什么新鲜事？
close= 好啦我先去忙了，回头聊！~好嘞，拜拜！|该吃饭了，下次再聊～~去吧去吧，吃好点！|困了，我先睡啦。~晚安，好梦！
  行，那我先撤了，下周再聊？~没问题，这周加油！|洗衣机响了，我得去晾衣服了。~哈哈快去，回头聊。
  今天聊得好开心，下次别隔这么久了。~一言为定！
pos= 太棒了！|哇，恭喜恭喜！|真替你高兴！|好厉害！|天哪，太好了吧！|这也太让人开心了！|你值得！|牛啊！
neg= 啊，太倒霉了。|天哪，你没事吧？|听着就好闹心。|抱抱，太难了。|这也太糟心了吧。|唉，辛苦你了。
sup= 能迈出这一步真的很不容易。|你愿意去就很好了。|为你骄傲。|这是很大的一步，现在感觉怎么样？
dpos= 谢谢！我到现在还在傻乐。|是吧，我自己都不敢相信。|谢谢！回头发照片给你。|说实话，这是我这个月最开心的事了。
dneg= 嗯，还好没更糟。|我没事，就是挺烦的。|谢谢，算是长个教训吧。|现在基本处理好了。
dsup= 谢谢，终于去了，心里踏实多了。|还有点难受，但轻松了不少，谢谢你。
prompt= 说说你吧，最近有什么新鲜事？|别光说我了，你最近怎么样？|你那边有什么消息吗？|最近在忙啥呢？|说点开心的事吧。
addon= 等一下，水开了。|扯远了哈哈。|不好意思，刚才在回工作消息。|我说到哪儿了？|哈哈哈哈|手机打字好慢。
reply= job~听着就好累，你还喜欢这份工作吗？~大部分时候还是喜欢的，同事人都不错。
  job~真不知道你是怎么扛下来的。~全靠咖啡续命。|city~我一直想去那边好好玩一趟。~来呀，我给你当导游。
  city~哈哈，每个城市都有它的小脾气。|pet_own~好可爱，快发照片！~马上发你。
  pet_own~哈哈，被宠坏了吧。~完全是家里的主子。|sib~哈哈，一家人就是又爱又烦。~太对了。
  sib~你们感情真好。~越长大越亲了。|inst~有机会一定要让我听听！~再给我几个月，哈哈。
  inst~好羡慕，我小时候学的早就忘光了。|food~哈哈，好选择。~是吧，我绝不悔改。|food~你这么一说我都饿了。
  car~车就是个吞金兽。~谁说不是呢。|car~老伙计再坚持一下！|weekend~听着好惬意。~是啊，一周就指望这个了。
  weekend~哈哈，你真是很有规律的人。|plan~好棒，我支持你！~到时候你监督我啊。|plan~有志气，你肯定可以的。
  sib_city~那你打算去看看吗？~争取这两个月就去。|sib_city~真好，那边生活挺舒服的吧。
  quit~哈哈，又解锁了新爱好。~你懂我的，三分钟热度。|partner~什么？！快从实招来！~刚开始，不过感觉挺好的。
  diet~哇，适应得怎么样？~比想象的难，但身体轻松多了。|diet~佩服你的毅力。
  allergy~听着好吓人，身上带着药吗？~一直带着。|allergy~那出去吃饭得特别小心了。
  fear~哈哈，谁还没点怕的东西。~我这个就是特别耽误事。|grewup~听着好惬意。~现在回想起来确实是。
  team~哈哈，真爱粉。~没办法，改不了了。|tongue~好厉害，我一句都听不懂。~哈哈，下次教你几句。
  birthday~记下了！到时候提醒我。~你可别忘了！|drink~哈哈，同款。~没喝之前别跟我说话。
  drink_new~哇，适应了吗？~头疼了一个星期，现在好多了。
follow= adopt~{kid}适应新家了吗？~早适应了，现在沙发是它的了。
  adopt~{kid}最近还拆家吗？~就咬坏了一根充电线，算有进步。|job_new~新工作怎么样？~还在熟悉中，不过同事都挺好的。
  move~新家收拾好了吗？~差不多了，就剩书架还没弄，我在逃避。|move~住得还习惯吗？~很喜欢，早上阳光特别好。
  cls~课还在上吗？~每周都去，感觉自己在慢慢变得没那么菜。|buy~新买的东西用得多吗？~天天用，今年花得最值的一笔钱。
  race~腿恢复了吗？~差不多了，前几天下楼梯跟受刑一样。|trip~旅行回来缓过来了吗？~还没，天天在翻照片。
  problem~上次那事处理好了吗？~基本好了，那一周真是够呛。|partner~最近感情还顺利吗？~挺好的，在一起很舒服。
  car_new~新车开着怎么样？~我现在天天找借口出门兜风。|sib_evt~家里最近是不是特别热闹？~是啊，大家都还沉浸在喜事里。
  achieve~还在庆祝吗？~哈哈有一点，奖励了自己一块蛋糕。|concert~演唱会的劲儿过去了吗？~没有，歌单循环到现在。
""")}
CHAT["en"]["fill"] = LINES("""
It's been pouring all day here, I'm soaked through.||Oh no! Hot shower and tea, immediately.||Already on it, ha.
It's so hot I've been living in front of the fan.||Same. I had cereal for dinner rather than turn on the stove.||Iconic.
First proper cold snap today — I dug out my winter coat.||Noooo, I'm not ready for winter.||Me neither. Wool socks time.
Gorgeous sunny day here, finally!||Ugh, jealous. It's grey and gloomy over here.||I'll send some sunshine your way.
Have you watched {show}? I binged half of it last night.||Not yet! Is it worth it?||Totally. Give it two episodes.
I finally started {show} — everyone was right.||Right?! Where are you up to?||Episode four. No spoilers!||Lips sealed.
I tried watching {show} but couldn't get into it.||Fair, it's a slow burn. It gets better.||Okay, one more try.
I'm reading {book} at the moment.||Oh, I've heard great things. Any good?||It's beautiful. I keep underlining sentences.
Just finished {book} and I need to talk about it.||I read it last year! The ending wrecked me.||Same. I just sat there.
Work has been relentless this week.||Ugh, I'm sorry. Are you getting any breaks?||Barely. Friday can't come soon enough.
I had three meetings today that could've been emails.||The eternal struggle.||I'm starting a campaign against them.
My inbox is a disaster right now.||Declare email bankruptcy! Delete everything.||Tempting. Very tempting.
I've been sleeping so badly lately.||Too much screen time before bed?||Probably. I keep saying "one more video".
I woke up at 4am again for no reason.||That's the worst. Did you get back to sleep?||Around six. Then the alarm rang.
Made {dish} for dinner tonight and it actually turned out great.||Ooh, send me the recipe!||Will do — it's so easy.
Attempted {dish} tonight. Let's just say it was... edible.||Ha, the first try never counts.||That's what I tell myself.
I'm starving and all I have is crackers and half an onion.||Classic fridge situation. Order something!||Ordering now.
Do you ever feel like the week just disappears?||All the time. How is it already {day}?||Exactly. I blinked.
I spent a whole day doing absolutely nothing.||Honestly, that's self-care.||That's my story and I'm sticking to it.
I've been trying to drink more water.||How's it going?||I bought a giant bottle covered in motivational quotes.
I need a new podcast for my commute. Any ideas?||Have you tried {podcast}? I'm obsessed.||Ooh, no! Adding it now.
Listening to {podcast} on my walk, I laughed out loud in the street.||Ha! People must have stared.||One guy did.
Ran errands all afternoon — {errand}, {errand2}, the lot.||Very productive!||I forgot the one thing I actually needed.
I think I need a proper holiday. Somewhere with zero wifi.||Sounds like heaven. Any ideas where?||Not yet. I just dream.
Do you think animals dream?||I'm pretty sure they do. Dogs twitch in their sleep!||Yes! It's the cutest thing.
I've been scrolling flight deals instead of working.||Ha, same. It's basically a hobby.||A cheap, imaginary hobby.
I tried a new coffee place near me this morning.||Any good?||The coffee was fine, but the cinnamon bun was unreal.
How's your family doing?||Everyone's good, thanks! My mum keeps asking when I'll visit.||Ha, some things never change.
I've been feeling a bit low this week.||I'm sorry. Want to talk about it?||Not really. One of those weeks.||I'm here.
Thanks for always listening, by the way.||Of course! That's what friends are for.||Still. It means a lot.
I cleaned my whole place today. It's never looked this good.||Can you come do mine next?||Only if you pay in snacks.
Any plans for the next few days?||Not really, maybe some reading. You?||Same. I'm aiming for maximum laziness.
I've been trying to go to bed earlier.||How's that working out?||As well as you'd expect. Midnight is the new ten.
My upstairs neighbour has been drilling since 7am.||Oh no. A special kind of torture.||Earplugs are on my list.
I saw the most beautiful sunset on the way home.||Did you get a photo?||Of course, but it doesn't do it justice.
I'm trying to cut back on my phone use.||Good luck! What's the plan?||Grey-scale screen. It's so boring I barely look.
Random question: sweet or savoury breakfast?||Savoury, always. Eggs on toast forever.||Wrong, but I respect it.
I keep meaning to call my grandma more often.||You should! She'd love that.||You're right. I'll call her tomorrow.
My houseplant is dying and I don't know why.||Too much water, probably.||Ugh, I've been drowning it with love.
I think I'm finally getting the hang of adulting.||Oh yeah?||I booked a dentist appointment unprompted.||Incredible.
I've got a headache from staring at screens all day.||Take a break! Go for a walk.||Good idea. Back in twenty.
It's so quiet today. I kind of love it.||Enjoy it! Those days are rare.||Right? Just me and a pot of tea.
Sorry I took forever to reply, it's been a week.||No worries! Everything okay?||Yeah, just busy. Calming down now.
I just realised my shirt's been inside out all day.||Hahaha. Did anyone notice?||If they did, they were too polite.
I'm trying to learn to cook without a recipe.||Brave. How's it going?||I've made a lot of soup. Some of it was good.
Have you ever had {dish}?||Once, years ago. I remember liking it!||You should make it, it's easier than it looks.
Anything fun happen this week?||Not much, honestly. Work, sleep, repeat.||Same. Quiet weeks are underrated.
My back is killing me from my desk chair.||You need a better chair. Or at least a cushion!||Noted. My spine thanks you.
I burnt my toast this morning and set off the smoke alarm.||Ha! Classic start.||The whole building knows now.
I'm obsessed with a song I heard in a café.||What is it?||No idea! I've been humming it all day trying to find it.
I started journaling again.||How does it feel?||Good, actually. Like clearing out a messy drawer.
You always know how to cheer me up, you know that?||Aw, stop it. You do the same for me.||We make a good team.
It's been a long day. I'm just happy to be on the sofa.||Same. Pyjamas on yet?||Since 6pm, obviously.
I'm trying to save money this month.||How's it going?||I've abandoned three online shopping carts. Brutal.
The bus was so packed this morning I could barely breathe.||Rush hour is no joke.||I'm leaving earlier tomorrow.
My neighbour's cat has decided my balcony is its home now.||Ha! Are you feeding it?||Maybe. A little. Don't judge.
I finally fixed the wobbly table leg. Feeling very handy.||Look at you! Shelves next?||Let's not get carried away.
Is it just me or is everything getting more expensive?||Not just you. Groceries are ridiculous.||Store brand forever.
I got caught in the rain without an umbrella again.||You never learn, do you?||Apparently not. Drowned rat look.
I've been trying to read before bed instead of scrolling.||Is it working?||I fall asleep after two pages, so... kind of?
I had the weirdest dream last night.||Oh? Tell me.||I was late for an exam in a school I've never been to. Classic.
My phone changed "meeting" to "meatball" in a work email.||Hahaha no. Did anyone notice?||My boss replied: "Spaghetti?"
Do you ever sit in the car for ten minutes before going inside?||All the time. The only quiet I get.||Same. Tiny peace.
I reorganised my whole bookshelf by colour.||That sounds beautiful but impractical.||It is both of those things.
I think I'm coming down with a cold.||Oh no. Lots of tea and early nights!||Already in bed with honey and lemon.
Someone in my building keeps taking the good parking spot.||The audacity!||I'm drafting a very passive-aggressive note.
I tried meditating this week.||How did it go?||Five minutes felt like an hour, but I'll keep at it.
The group chat has been unhinged today.||Ha, what happened?||Someone sent a voice note at 2x speed. Chaos.
I've been craving something sweet all day.||Treat yourself! It's allowed.||You're right. Ice cream it is.
I finally replied to all my emails.||Inbox zero?!||Inbox twelve. Close enough.
Traffic on the way home was a nightmare tonight.||Ugh. At least a good podcast?||I listened to a whole album.
""")
CHAT["zh"]["fill"] = LINES("""
今天下了一整天的雨，我鞋都湿透了。||啊，赶紧洗个热水澡，别感冒了。||已经在烧水了哈哈。
热死了，我今天在空调底下一步都没挪。||我这边也是，晚饭都懒得做，直接吃了半个西瓜。||西瓜当晚饭，可以的。
今天降温了，风大得能把人吹跑。||记得穿秋裤！||哈哈哈你跟我妈说的一模一样。
今天终于出太阳了，心情都变好了。||羡慕，我这边还是阴沉沉的。||给你分点阳光过去。
你看{show}了吗？我昨晚一口气看了五集。||还没呢，好看吗？||好看！前两集有点慢，后面停不下来。
我终于开始看{show}了，大家说得没错。||对吧！你看到第几集了？||第四集，千万别剧透！||放心，我嘴很严。
{show}我看了两集实在看不下去。||正常，它是慢热型的，后面好看很多。||那我再给它一次机会。
最近在读{book}。||我听说过，怎么样？||写得特别好，我看一会儿就得停下来缓缓。
刚看完{book}，好想找人聊聊。||我去年看的！结尾太戳人了。||是吧，我看完发了好久的呆。
这周工作真是忙疯了。||辛苦了，能喘口气吗？||基本没有，就盼着周五了。
今天开了三个会，其实发个邮件就能解决。||打工人的日常。||我真想发起一个“拒绝无效开会”运动。
我最近睡眠特别差。||是不是睡前刷手机刷太久了？||可能是，总想着再看一个视频就睡。
我今天凌晨四点莫名其妙醒了。||太难受了，后来睡着了吗？||六点才迷迷糊糊睡着，然后闹钟就响了。
今晚自己做了{dish}，居然挺成功的。||哇，求菜谱！||回头发你，超级简单。
今天试着做了{dish}，怎么说呢……能吃。||哈哈哈第一次都这样。||我也是这么安慰自己的。
好饿，冰箱里只剩半根黄瓜和两个鸡蛋。||经典冰箱。点外卖吧！||你真是坏榜样，已经下单了。
你有没有觉得一周过得特别快？||太有了，怎么又{day}了？||就是，一眨眼就没了。
我在家躺了一整天，啥也没干。||这叫充电，不叫浪费。||说得好，就这么定了。
我最近在努力多喝水。||效果怎么样？||买了个超大水壶，上面写着“该喝水了”，天天被它催。
通勤路上想找个播客听，有推荐吗？||你试试{podcast}，我最近特别爱听。||还没听过，马上去搜。
今天散步的时候听{podcast}，在大街上笑出声了。||哈哈哈路人肯定觉得你很奇怪。||确实有个大爷回头看了我一眼。
下午跑了一堆杂事，{errand}、{errand2}，全办完了。||效率好高！||别夸，我把最重要的那件给忘了。
我觉得我需要一个真正的假期，最好是没信号的地方。||听着就很爽，有想去的地方吗？||还没，光想想就很开心了。
你觉得小动物会做梦吗？||肯定会吧，你看狗睡觉的时候腿还会蹬。||对对对，太可爱了。
我上班摸鱼一直在刷机票。||哈哈我也是，刷机票已经成爱好了。||不花钱的那种爱好。
今天早上去楼下新开的咖啡店试了一下。||好喝吗？||咖啡一般，但是肉桂卷绝了。
家里人最近都还好吗？||都挺好的，我妈又在问我什么时候回家。||哈哈，妈妈们都一样。
这周情绪有点低落，也说不上为什么。||抱抱，想聊聊吗？||其实也没什么，就是这样的一周。||没事，我随时都在。
谢谢你一直听我唠叨。||说什么呢，朋友不就是干这个的。||还是要谢谢，真的。
今天把家里彻底打扫了一遍，从来没这么干净过。||哇，能来我家也打扫一下吗？||可以，请我吃顿饭就行。
最近有什么安排吗？||没啥安排，可能看看书。你呢？||一样，目标是躺平。
我在努力早点睡。||效果如何？||跟你想的一样，十二点是新的十点。
楼上邻居一大早就开始装修，电钻声吵死了。||天哪，太折磨了。||耳塞已经加入购物车。
下班路上看到特别好看的晚霞。||拍照了吗？||拍了，但照片拍不出那种感觉。
我在努力少玩手机。||加油，有什么办法吗？||把屏幕调成黑白的，无聊到不想碰。
随便问一句，早饭你喜欢甜的还是咸的？||咸的，豆浆油条万岁。||豆浆也有甜的好吗！||甜豆浆党，我不跟你吵哈哈。
我一直想多给奶奶打电话。||多打吧，老人家会很开心的。||你说得对，明天就打。
我那盆绿萝快不行了，不知道为什么。||可能是水浇多了，我的就是这么没的。||完了，我一直在“爱”它。
我觉得自己终于有点像个成年人了。||哦？发生什么了？||没人提醒我，我自己约了牙医。||了不起，真的。
盯了一天屏幕，头好疼。||休息一下吧，出去走走。||好主意，二十分钟后回来。
今天好安静，我还挺喜欢的。||享受吧，这种日子不多。||是啊，就我和一壶茶。
不好意思回这么晚，这周太忙了。||没事没事，一切还好吧？||还好，就是忙，现在缓过来了。
我刚发现我衣服穿反了一整天。||哈哈哈哈有人发现吗？||就算发现了也没人好意思说吧。
我在练习不看菜谱做饭。||勇气可嘉，怎么样了？||做了很多汤，有几锅还挺好喝。
这周有什么好玩的事吗？||没什么，上班、睡觉、循环。||一样，平淡的一周也挺好。
坐了一天，腰疼死了。||换把椅子吧，或者起来多走动走动。||嗯，我定个闹钟提醒自己站起来。
早上烤面包烤糊了，烟雾报警器都响了。||哈哈哈，元气满满的一天。||整栋楼都知道我早饭吃啥了。
在咖啡店听到一首歌，一直在脑子里循环。||叫什么名字？||不知道啊！我哼了一天都没找到。
我又开始写日记了。||感觉怎么样？||挺好的，像把乱糟糟的抽屉整理了一遍。
你总是知道怎么让我开心。||哎呀，你也一样啊。||我们真是好搭档。
今天好累，只想瘫在沙发上。||同感，睡衣换上了吗？||六点就换了，那还用说。
这个月我在努力存钱。||进展如何？||已经忍住清空了三次购物车，太难了。
你吃饭了没？||刚吃完，随便煮了碗面。你呢？||还没，正在纠结吃什么。||世纪难题。
今天地铁上挤得我怀疑人生。||早高峰是这样的，辛苦了。||明天我要早出门二十分钟。
最近在学着做手账，结果买文具花了好多钱。||哈哈，学习还没开始，装备先到位。||被你说中了。
最近小区里来了只流浪猫，天天蹲在我家楼下。||哈哈，你是不是偷偷喂它了？||就喂了一点点，别说出去。
今天终于把晃了半年的桌腿修好了。||可以啊，动手能力见长。||下一步挑战装书架。
你有没有觉得最近什么都在涨价？||有，我买菜都得精打细算了。||我现在只买超市自有品牌。
又忘带伞了，淋成了落汤鸡。||你怎么老不长记性哈哈。||包里常备一把，这次真记住了。
我在试着睡前看书，不刷手机。||有用吗？||看两页就睡着了，算有用吧。
昨晚做了个特别离谱的梦。||什么梦？||梦到考试迟到，考场还是个我从没去过的学校。
输入法把“开会”打成了“开荤”，还发给了领导。||哈哈哈哈然后呢？||领导回了个“加鸡腿”的表情。
你会不会下班后在车里坐十分钟再上楼？||会！那是一天里唯一安静的时候。||太懂了。
我把书架按颜色重新整理了一遍。||好看是好看，找书估计很难吧。||你说对了，两样都是真的。
我好像有点感冒了。||多喝热水，早点睡！||已经裹着被子在喝姜茶了。
楼里有人老占我的车位。||太过分了吧！||我正在写一张阴阳怪气的小纸条。
这周试了试冥想。||感觉怎么样？||五分钟像过了一小时，不过我会坚持的。
群里今天聊疯了。||哈哈发生什么了？||有人发了段两倍速的语音，谁都没听懂。
一整天都特别想吃甜的。||那就奖励自己一下！||你说得对，冰淇淋走起。
终于把积压的邮件都回完了。||清零了？||还剩十二封，差不多就行。
今天下班路上堵了一个小时。||太惨了，听点播客打发时间吧。||我在车里把一张专辑从头听到尾。
""")

# ============================================================== 4. question templates
QT = {"en": BLOCK("""
petname= What is the name of {P}'s {kindn}?|What did {P} name {poss} {kindn}?|What's {P}'s {kindn} called?
petkind= What kind of animal is {name}, {P}'s pet?|{P} has a pet called {name} — what animal is it?
job= What does {P} do for a living?|What is {P}'s job?|Where does {P} work, and in what role?
city= Which city does {P} live in?|Where is {P} based?|What city does {P} call home?
sib= What is the name of {P}'s {rel}?|What's {P}'s {rel} called?|Who is {P}'s {rel}?
inst= What instrument does {P} play?|Which instrument is {P} learning?|What instrument does {P} practise?
allergy= What is {P} allergic to?|What does {P} have an allergy to?
fear= What is {P} afraid of?|What is {P}'s biggest fear?|grewup= Where did {P} grow up?|Where is {P} from originally?
team= Which team does {P} support?|What team is {P} a fan of?
tongue= Besides English, what language does {P} speak?|What language did {P} grow up speaking at home?
birthday= When is {P}'s birthday?|On what day does {P} celebrate {poss} birthday?
drink= What does {P} need to get going in the morning?|What does {P} drink to wake up?
food= What is {P}'s favourite food?|What could {P} happily eat every day?|What food does {P} love most?
car= What car does {P} drive?|What kind of car does {P} have?|partner= Who is {P} dating?|Who is {P} seeing?
meet= How did {P} meet {pname}?|Where did {P} and {pname} first meet?
trip= Where did {P} go to {act}?|Which place did {P} visit to {act}?
trip_with= Who did {P} go to {place} with?|Who went with {P} on the trip to {place}?
tripdo= What did {P} do in {place}?|What was a highlight of {P}'s trip to {place}?
concert= Which artist did {P} see live?|Whose concert did {P} go to?
race= What race did {P} take part in?|Which race did {P} finish?
workshop= What workshop did {P} attend?|What kind of workshop did {P} go to?
group= What kind of support group did {P} join?|Which support group has {P} started attending?
festival= Which festival did {P} go to?|What festival did {P} spend a day at?
cls= What new hobby did {P} take up?|What did {P} sign up to learn?|What has {P} started learning?
plan= What is {P} planning to do {when}?|What does {P} hope to do {when}?|What's {P}'s goal for {when}?
sib_city1= Who did {P} say has settled in {city}?|Who has moved to {city}, according to {P}?
vet1= Which of {P}'s pets had to see the vet?|Which of {P}'s pets got sick?
sib_evt1= What big news did {P} share about {sname}?|What happened in {sname}'s life, according to {P}?
job_new1= Where did {P} start {poss} new job?|Which workplace did {P} join as {job}?
quit1= What hobby did {P} give up?|Which hobby did {P} drop?|partner_end1= Who did {P} {v}?
when_day= When did {P} {v}?|On what date did {P} {v}?|What day did {P} {v}?
when= When did {P} {v}?|Roughly when did {P} {v}?|Around when did {P} {v}?
month= What did {P} do in {M}?|What did {P} get up to in {M}?|What happened with {P} in {M}?
gap= How long after {g1} did {P} {v2}?|How much time passed between {P} {g1} and {g2}?
  How many days before {g2} did {P} {v1}?
order= Which came first for {P}: {g1} or {g2}?|Did {P} {v1} before or after {g2}?
pets_first= Which of {P}'s pets has {pr} had longer, {a} or {b}?|Which pet did {P} have first, {a} or {b}?
pet_count= How many pets does {P} have, and what are they called?|Can you list {P}'s pets?
vet= What was wrong with {P}'s {kindn} at the vet?|Why did {P}'s {kindn} need to see a vet?
sib_city= Which city does {P}'s {rel} live in?|Where has {P}'s {rel} settled down?
sib_evt_married= When did {P}'s {rel} get married?|sib_evt_baby= When did {P}'s {rel} have a baby?
sib_evt_grad= When did {P}'s {rel} graduate?|sibs= What are the names of {P}'s {r1} and {r2}?
weekend= What do {P} and {Q} both like to do at weekends?|Which weekend pastime do {P} and {Q} share?
shared_trip= Which place have both {P} and {Q} travelled to?|Name a destination both {P} and {Q} have visited.
both_inst= Which instruments do {P} and {Q} play?|both_concert= Which artists did {P} and {Q} each see live?
both_job= What do {P} and {Q} each do for work?|both_grewup= Where did {P} and {Q} each grow up?
birthday_first= Whose birthday comes earlier in the year, {P}'s or {Q}'s?
trips= Which places did {P} travel to?|Where has {P} been on trips?
first_adopt= Who brought home a new pet first, {P} or {Q}?|meet_end= Where did {P} meet the person {pr} {rel_p}?
city_at= Which city was {P} living in when {pr} {p}?|job_at= What was {P}'s job when {pr} {p}?
move= Where does {P} live now?|Which city is {P} living in these days?|What's {P}'s current city?
move_prev= Where did {P} live before moving to {city}?|move_still= Does {P} still live in {old}?
job_new= What is {P}'s current job?|What does {P} do for work now?
job_prev= What did {P} do before {poss} current job?|job_still= Is {P} still working at {old}?
diet= What kind of diet is {P} following these days?|Has {P} changed the way {pr} eats? What's {poss} diet now?
diet_prev= What was {P}'s favourite food before {pr} changed {poss} diet?|diet_still= Does {P} still eat {food}?
quit= What hobby is {P} into now instead of {hobby}?|What has {P} swapped {hobby} for?
quit_still= Is {P} still doing {hobby}?|car_new= What car does {P} drive now?|What is {P}'s current car?
car_prev= What did {P} drive before {poss} current car?|car_still= Does {P} still drive the {car1}?
drink_still= Does {P} still start the day with {old}?
drink_new= What does {P} drink in the mornings these days?|What's {P}'s morning drink now?
partner_end= Is {P} still with {pname}?|What's the status of {P}'s relationship with {pname} now?
"""), "zh": BLOCK("""
petname= {P}的{kindn}叫什么名字？|{P}给自家的{kindn}起了什么名字？|{P}养的那只{kindn}叫啥？
petkind= {P}家的{name}是什么动物？|{P}养的宠物{name}是什么动物？
job= {P}是做什么工作的？|{P}的职业是什么？|{P}在哪里上班，做什么？
city= {P}住在哪个城市？|{P}在哪座城市生活？|{P}的家在哪个城市？|sib= {P}的{rel}叫什么名字？|{P}{rel}的名字是什么？
inst= {P}在学什么乐器？|{P}平时练的是什么乐器？|{P}会哪种乐器？|allergy= {P}对什么过敏？|{P}有什么过敏的东西？
fear= {P}害怕什么？|{P}最大的弱点是什么？|grewup= {P}是在哪里长大的？|{P}的老家在哪儿？
team= {P}是哪支球队的球迷？|{P}支持哪支球队？|tongue= {P}会说哪种方言？|{P}从小在家说什么话？
birthday= {P}的生日是哪天？|{P}哪天过生日？|drink= {P}早上靠喝什么提神？|{P}每天早上离不开什么饮品？
food= {P}最爱吃什么？|{P}的心头好是什么吃的？|{P}最喜欢吃的是什么？|car= {P}开的是什么车？|{P}的车是什么型号？
partner= {P}在和谁约会？|{P}的对象叫什么？|meet= {P}和{pname}是怎么认识的？|{P}是在哪儿认识{pname}的？
trip= {P}去哪里{act}了？|{P}是在哪儿{act}的？|trip_with= {P}是和谁一起去{place}的？|{P}去{place}的时候谁陪着？
tripdo= {P}在{place}玩了什么？|{P}去{place}有什么难忘的经历？
concert= {P}去看了谁的演唱会？|{P}现场听了哪位歌手或乐队的演出？|race= {P}参加了哪场比赛？|{P}完成了什么比赛？
workshop= {P}去参加了什么课程或工作坊？|{P}参加的是什么主题的活动课？
group= {P}加入了什么样的互助小组？|{P}开始参加哪种互助会？|festival= {P}去逛了什么节？|{P}去了哪个节庆活动？
cls= {P}最近开始学什么？|{P}新培养了什么爱好？|{P}报了什么班？|plan= {P}打算{when}做什么？|{P}{when}有什么计划？
sib_city1= {P}提到谁在{city}定居了？|据{P}说，谁在{city}安了家？
vet1= {P}带去看医生的宠物叫什么？|{P}家哪只宠物生病了？|sib_evt1= {P}说{sname}最近有什么喜事？|{sname}最近有什么大事？
job_new1= {P}的新工作在哪个单位？|{P}跳槽去了哪里？|quit1= {P}放弃了哪个爱好？|{P}不再玩什么了？
partner_end1= {P}和谁{v}了？|when_day= {P}是什么时候{v}的？|{P}是哪一天{v}的？|{P}{v}是在哪天？
when= {P}是什么时候{v}的？|{P}大概什么时候{v}的？
month= {M}{P}做了什么？|{P}在{M}有什么新动态？|{M}的时候{P}干了件什么事？
gap= {P}从{v1}到{v2}，中间隔了多久？|{P}{v1}之后过了多久才{v2}？|{P}{v1}比{v2}早了多少天？
order= {P}是先{v1}还是先{v2}？|{P}{v1}是在{v2}之前还是之后？
pets_first= {a}和{b}，{P}先养的是哪个？|{P}家的{a}和{b}，哪个来得更早？
pet_count= {P}一共养了几只宠物？分别叫什么？|{P}家里都有哪些宠物？
vet= {P}家的{kindn}去看医生是什么原因？|{P}的{kindn}生了什么病？
sib_city= {P}的{rel}住在哪个城市？|{P}的{rel}在哪里定居了？|sib_evt_married= {P}的{rel}是什么时候结婚的？
sib_evt_baby= {P}的{rel}是什么时候生的孩子？|sib_evt_grad= {P}的{rel}是什么时候毕业的？
sibs= {P}的{r1}和{r2}分别叫什么？|weekend= {P}和{Q}周末都喜欢做什么？|{P}和{Q}有什么共同的周末爱好？
shared_trip= {P}和{Q}都去过哪个地方？|有哪个地方是{P}和{Q}都去旅行过的？|both_inst= {P}和{Q}分别在练什么乐器？
both_concert= {P}和{Q}各自去看了谁的演唱会？|both_job= {P}和{Q}分别是做什么工作的？
both_grewup= {P}和{Q}各自是在哪里长大的？|birthday_first= {P}和{Q}谁的生日在一年里更早？
trips= {P}都去哪些地方旅行过？|{P}去过哪些地方玩？|first_adopt= {P}和{Q}谁先领养了新宠物？
meet_end= {P}后来和对象{rel_p}了，他们当初是在哪儿认识的？|city_at= {P}{v}那会儿住在哪座城市？
job_at= {P}{v}的时候在做什么工作？|move= {P}现在住在哪个城市？|{P}目前在哪座城市生活？
move_prev= {P}搬到{city}之前住在哪里？|move_still= {P}还住在{old}吗？
job_new= {P}现在做什么工作？|{P}目前的工作是什么？|job_prev= {P}换工作之前是做什么的？|job_still= {P}还在{old}上班吗？
diet= {P}现在的饮食有什么讲究？|{P}最近在饮食上有什么改变？|diet_prev= {P}改变饮食习惯之前最爱吃什么？
diet_still= {P}现在还吃{food}吗？|quit= {P}不玩{hobby}之后迷上了什么？|{P}现在的爱好换成了什么？
quit_still= {P}还在学{hobby}吗？|car_new= {P}现在开什么车？|{P}目前的车是什么？|car_prev= {P}换车之前开的是什么车？
car_still= {P}还开那辆{car1}吗？|drink_new= {P}现在早上喝什么？|{P}现在早上的饮品换成了什么？
drink_still= {P}早上还喝{old}吗？|partner_end= {P}现在还和{pname}在一起吗？|{P}和{pname}现在是什么关系？
""")}
ANS = {"en": BLOCK("""
job= {job} at {org}|breakup= They broke up.|engaged= Still together — they got engaged.|both= {P}: {a}; {Q}: {b}
movein= Still together — they've moved in together.|married= {sprC} got married.|baby= {sprC} had a baby.
grad= {sprC} graduated.|rel_breakup= later broke up with|rel_engaged= got engaged to|rel_movein= moved in with
move_still= No — {pr} moved to {city}.|job_still= No — {pr}'s now {job} at {org}.
car_still= No — {pr} drives a {car2} now.|diet_still= No — {pr} went {diet}.|quit_still= No — {pr} switched to {new}.
drink_still= No — {pr} drinks {x} now.
"""), "zh": BLOCK("""
job= 在{org}当{job}|breakup= 已经分手了。|engaged= 还在一起，而且已经订婚了。|movein= 还在一起，两人已经同居了。
both= {P}：{a}；{Q}：{b}|married= 结婚了|baby= 生了孩子|grad= 博士毕业了|rel_breakup= 分手|rel_engaged= 订婚
rel_movein= 同居|move_still= 不住了，{pr}已经搬到{city}了。|job_still= 不在了，{pr}现在在{org}当{job}。
car_still= 不开了，{pr}换成了{car2}。|diet_still= 不吃了，{pr}开始{diet}了。|quit_still= 没有，{pr}现在迷上了{new}。
drink_still= 不喝了，{pr}现在改喝{x}了。
""")}


# ============================================================== 5. dates and relative time
def _window(key, d):
    """(first day, last day, granularity) of an event told on date d with relative time `key`."""
    one = dt.timedelta(days=1)
    back = {"today": 0, "yesterday": 1, "d2": 2, "d3": 3}
    if key in back:
        return d - back[key] * one, d - back[key] * one, "day"
    if key in ("lastsat", "lastweekend"):  # only chosen when d is Monday-Friday
        x = d - one * (d.weekday() + 2)
        return (x, x, "day") if key == "lastsat" else (x, x + one, "weekend")
    if key == "lastweek":
        m = d - one * (d.weekday() + 7)
        return m, m + 6 * one, "week"
    if key == "w2":
        return d - 17 * one, d - 11 * one, "approx"
    if key == "lastmonth":
        last = d.replace(day=1) - one
        return last.replace(day=1), last, "month"
    return d - 40 * one, d, None  # vague: never asked about


def _dstr(lang, d):
    return f"{d.day} {V['en']['months'][d.month - 1]} {d.year}" if lang == "en" else f"{d.year}年{d.month}月{d.day}日"


def _range(lang, a, b):
    if lang == "zh":
        tail = f"{b.day}日" if a.month == b.month else f"{b.month}月{b.day}日" if a.year == b.year else _dstr(lang, b)
        return f"{_dstr(lang, a)}至{tail}"
    if a.month == b.month:
        return f"{a.day}–{_dstr(lang, b)}"
    return f"{a.day} {V['en']['months'][a.month - 1]}{'' if a.year == b.year else f' {a.year}'} – {_dstr(lang, b)}"


def _when(lang, it, sd):
    lo, hi = it.win
    en = lang == "en"
    if it.gran == "day":
        return _dstr(lang, lo)
    if it.gran in ("weekend", "week"):
        r = _range(lang, lo, hi)
        return f"the {it.gran} of {r}" if en else r + ("那个周末" if it.gran == "weekend" else "那一周")
    if it.gran == "approx":
        c = _dstr(lang, lo + dt.timedelta(days=3))
        return (f"around {c} (about two weeks before {_dstr(lang, sd)})" if en
                else f"{c}前后（{_dstr(lang, sd)}的大约两周前）")
    return f"{V['en']['months'][lo.month - 1]} {lo.year}" if en else f"{lo.year}年{lo.month}月"


# ============================================================== 6. personas and life events
class Item:
    """One fact told in one turn: an intro (job, city...), a dated life event, or an update."""

    def __init__(self, owner, kind, slots, lo, hi, dep):
        self.owner, self.kind, self.slots, self.lo, self.hi, self.dep = owner, kind, slots, lo, hi, dep
        self.session = self.win = self.gran = self.tid = self.text = None


class Deck:
    """Draws from a list without repeats until it is used up, then reshuffles (one per conversation)."""

    def __init__(self, rng):
        self.rng, self.left = rng, {}

    def __call__(self, key, items):
        left = self.left.setdefault(key, [])
        if not left:
            left.extend(self.rng.sample(items, len(items)))
        return left.pop()


def _person(lang, name, g):
    f = g == "f"
    pro = (dict(pr="she" if f else "he", poss="her" if f else "his", refl="herself" if f else "himself",
                au="aunt" if f else "uncle") if lang == "en" else dict(pr="她" if f else "他"))
    return {"name": name, "addr": name[1:] if lang == "zh" and len(name) == 3 else name, "pro": pro}


def _life(rng, lang, people):
    v, items, used = V[lang], [], {}

    def pick(pool, key=None):
        u = used.setdefault(key or pool, [])
        x = rng.choice([x for x in v[pool] if x not in u] or v[pool])
        u.append(x)
        return x

    def add(o, kind, lo=0, hi=99, dep=None, **slots):
        items.append(Item(o, kind, slots, lo, hi, dep))
        return items[-1]

    def num():
        return rng.choice(v["nums"])

    def tup(keys, e):
        return dict(zip(keys, e, strict=True))

    shared_act = pick("weekend") if rng.random() < .8 else None
    first_kind = first_rel = None
    trips0 = []
    for o in (0, 1):
        J = add(o, "job", 0, 3, **tup(("job", "org"), pick("jobs")), n=num())
        if rng.random() < .65:
            add(o, "job_new", 4, 99, J, **tup(("job", "org"), pick("jobs")))
        C = add(o, "city", 0, 3, city=pick("cities"), n=num())
        if rng.random() < .6:
            add(o, "move", 3, 99, C, city=pick("cities"))
        kinds = rng.sample(v["pets"], len(v["pets"]))
        if first_kind and rng.random() < .5:  # both have a dog: "What is Daniel's dog called?" is a speaker question
            kinds.remove(first_kind)
            kinds.insert(0, first_kind)
        first_kind = first_kind or kinds[0]
        pets = []
        for k in range(rng.choice([1, 2, 2, 3])):
            ppr, pobj = rng.choice(v["petpro"])
            s = dict(kindn=kinds[k][0], kid=kinds[k][1], name=pick("petnames"), ppr=ppr, pobj=pobj)
            own = k == 0 and rng.random() < .45
            pets.append(add(o, "pet_own", 0, 4, n=num(), **s) if own else add(o, "adopt", 1, 99, **s))
        if rng.random() < .6:
            pet = rng.choice(pets)
            add(o, "vet", 0, 99, pet, issue=pick("vet"), **{k: pet.slots[k] for k in ("name", "kindn", "kid", "ppr")})
        rels = rng.sample(v["rels"], len(v["rels"]))
        if first_rel and rng.random() < .5:
            rels.remove(first_rel)
            rels.insert(0, first_rel)
        first_rel = first_rel or rels[0]
        for rel, g in rels[:rng.choice([1, 1, 2])]:
            g = g if g != "x" else rng.choice("fm")
            s = dict(rel=rel, sname=pick("kin_" + g), spr=v["spro"][g == "m"])
            SI = add(o, "sib", 0, 5, **s)
            if rng.random() < .8:
                add(o, "sib_city", 0, 99, SI, city=pick("cities"), **s)
            if rng.random() < .5:
                add(o, "sib_evt", 0, 99, SI, sub=rng.choice(["married", "baby", "grad"]), **s)
        for kind, p, hi in SIMPLE:
            if rng.random() < p:
                add(o, kind, 0, hi, x=pick(kind))
        if rng.random() < .6:
            m, d = rng.randint(1, 12), rng.randint(1, 28)
            add(o, "birthday", 0, 12, md=(m, d), x=f"{d} {v['months'][m - 1]}" if lang == "en" else f"{m}月{d}日")
        if rng.random() < .55:
            DR = add(o, "drink", 0, 6, x=pick("drink"))
            if rng.random() < .55:
                add(o, "drink_new", 4, 99, DR, x=pick("newdrink"), old=DR.slots["x"])
        food, tag = pick("foods")
        F = add(o, "food", 0, 6, food=food)
        if rng.random() < .5:
            add(o, "diet", 5, 99, F, food=food, diet=v["diets"][tag])
        if rng.random() < .6:
            car = pick("cars")
            last = add(o, "car", 0, 5, car=car)
            if rng.random() < .5:
                e = next(x for x in v["problems"] if x[0] == "car")
                last = add(o, "problem", 1, 99, last, car=car, **tup(("sub", "core", "q", "a", "v", "p"), e))
            if rng.random() < .6:
                add(o, "car_new", 3, 99, last, car1=car, car2=pick("cars"))
        act = shared_act or pick("weekend")
        add(o, "weekend", 0, 12, label=act[0], ph=act[1], shared=bool(shared_act))
        if rng.random() < .5:
            PI = add(o, "partner", 1, 10, pname=pick("partners"), meet=pick("meets"))
            if rng.random() < .8:
                sub = rng.choice(["breakup", "engaged", "movein"])
                add(o, "partner_end", 3, 99, PI, pname=PI.slots["pname"], sub=sub)
        for k in range(rng.choice([3, 3, 4])):
            if o == 1 and k == 0 and trips0 and rng.random() < .5:  # a place both of them visited
                T0 = rng.choice(trips0)
                T0.slots["shared"] = True
                add(o, "trip", 1, 99, place=T0.slots["place"], act=T0.slots["act"], detail=v["trip_generic"][0],
                    shared=True)
                continue
            comp = pick("comps", f"comps{o}") if rng.random() < .5 else None
            tr = add(o, "trip_with" if comp else "trip", 1, 99, **tup(("place", "act", "detail"), pick("trips")),
                     shared=False, comp=comp)
            trips0 += [tr] if o == 0 else []
        for sub in rng.sample(sorted(EVENTS), 3):
            add(o, sub, 1, 99, **{EVENTS[sub]: pick(sub)})
        cats = set()
        for _ in range(rng.choice([2, 3])):
            e = pick("buys")
            while e[-1] in cats:
                e = pick("buys")
            cats.add(e[-1])
            add(o, "buy", 1, 99, **tup(("item", "cat") if lang == "en" else ("m", "item", "cat"), e))
        for pool, kind, n in (("problems", "problem", rng.choice([1, 2])), ("achieve", "achieve", 2)):
            subs = set()
            while len(subs) < n:
                e = pick(pool)
                if e[0] != "car" and e[0] not in subs:
                    subs.add(e[0])
                    add(o, kind, 1, 99, **tup(("sub", "core", "q", "a", "v", "p"), e))
        if rng.random() < .8:
            CL = add(o, "cls", 1, 99, **tup(("hobby", "cls"), pick("classes")))
            if rng.random() < .45:
                add(o, "quit", 0, 99, CL, hobby=CL.slots["hobby"], new=pick("newhobby"))
        for when in rng.sample(v["whens"], rng.choice([1, 2])):  # one plan per "when": the question stays unambiguous
            add(o, "plan", 0, 99, act=pick("plans"), when=when)
    return items


# ============================================================== 7. scheduling and rendering
def _schedule(rng, items, n):
    load = [0] * n
    for it in items:
        if it.dep is not None and it.dep.session is None:
            continue
        lo, hi = max(it.lo, it.dep.session + 1 if it.dep is not None else 0), min(it.hi, n - 1)
        if lo > n - 1:
            continue
        hi = max(hi, lo)
        it.session = min(rng.sample(range(lo, hi + 1), min(3, hi - lo + 1)), key=lambda s: load[s])
        load[it.session] += 1


def _assign_times(rng, lang, items, dates):
    busy = set()
    for it in items:
        if it.session is None or it.kind not in DATED:
            continue
        d = dates[it.session][0]
        keys = ALLOWED_REL.get(it.kind, DEFAULT_REL).split()
        if d.weekday() > 4:
            keys = [k for k in keys if k not in ("lastsat", "lastweekend")]
        exact = rng.sample([k for k in keys if k != "vague"], len(keys) - ("vague" in keys))
        order = (["vague"] if "vague" in keys and rng.random() < .15 else []) + exact + ["yesterday", "today"]
        floor = None if it.dep is None else it.dep.win[1] if it.dep.win else dates[it.dep.session][0]
        for k in order:
            lo, hi, g = _window(k, d)
            if (floor is None or lo > floor) and (g != "day" or (it.owner, lo) not in busy):
                break
        it.win, it.gran = (lo, hi), g
        busy.add((it.owner, lo))
        it.slots["t"] = rng.choice(REL[lang][k])


def _item_text(deck, lang, it, people):
    s = dict(people[it.owner]["pro"], **it.slots, my="my")
    key = it.kind
    if it.kind in ("sib_evt", "partner_end"):
        key = f"{it.kind}_{it.slots['sub']}"
    elif it.kind == "diet":
        key = "diet_" + it.slots["diet"].replace("-", "_")
    if it.kind in ("problem", "achieve"):
        s["core"] = fmt(it.slots["core"], **s)
    s.update({k: fmt(x, my="my") for k, x in s.items() if isinstance(x, str) and "{my}" in x})
    return fmt(deck(lang + key, TPL[lang][key]), **s)


def _render(rng, lang, cid, people, items, dates):
    ch, v, n, deck = CHAT[lang], V[lang], len(dates), Deck(rng)
    by_s, fu_s = [[] for _ in range(n)], [[] for _ in range(n)]
    follow, reply = {}, {}
    for kind, *rest in ch["follow"]:
        follow.setdefault(kind, []).append(rest)
    for kind, *rest in ch["reply"]:
        reply.setdefault(kind, []).append(rest)
    for it in items:
        if it.session is not None:
            by_s[it.session].append(it)
            s2 = it.session + rng.randint(1, 4)
            if it.kind.removesuffix("_with") in follow and s2 < n and rng.random() < .35:
                fu_s[s2].append(it)

    def filler():
        e1, e2 = rng.sample(v["errands"], 2)
        return [fmt(x, show=rng.choice(v["shows"]), book=rng.choice(v["books"]), dish=rng.choice(v["dishes"]),
                    podcast=rng.choice(v["podcasts"]), errand=e1, errand2=e2, day=rng.choice(v["days"]))
                for x in deck("fill", ch["fill"])]

    sessions = []
    for si in range(n):
        turns = []  # [speaker index, text, item or None]

        def emit(lines, starter, turns=turns):
            turns.extend([(starter + k) % 2, x, None] for k, x in enumerate(lines))

        target = rng.randint(20, 35)
        st = rng.randint(0, 1)
        emit([fmt(x, o=people[1 - st]["addr"]) for x in deck("greet", ch["greet"])], st)
        seq = [("item", it) for it in by_s[si]] + [("fu", it) for it in fu_s[si]]
        need = target - 4 - 3 * len(by_s[si]) - 2 * len(fu_s[si])
        seq += [("fill", None)] * max(0, round(need / 2.8))
        rng.shuffle(seq)
        left = len(by_s[si])
        for what, it in seq:
            last = turns[-1][0]
            if what == "fill":
                block = filler()
                if len(turns) + len(block) + 3 * left + 2 <= target:
                    emit(block, last if rng.random() < .06 else 1 - last)
            elif what == "fu":
                fk = it.kind.removesuffix("_with")
                q, a = deck(lang + "fu" + fk, follow[fk])
                turns += [[1 - it.owner, fmt(q, **it.slots), None], [it.owner, fmt(a, **it.slots), None]]
            else:
                left -= 1
                o, x = it.owner, 1 - it.owner
                if last == o:
                    turns.append([x, deck("prompt", ch["prompt"]), None])
                turns.append([o, _item_text(deck, lang, it, people), it])
                if it.kind in reply:
                    r = deck(lang + "re" + it.kind, reply[it.kind])
                    turns += [[x, r[0], None]] + ([[o, r[1], None]] if len(r) > 1 else [])
                else:
                    sent = SENT.get(it.kind, "neg" if it.slots.get("sub") == "breakup" else "pos")
                    turns.append([x, deck(sent, ch[sent]), None])
                    if rng.random() < .4:
                        turns.append([o, deck("d" + sent, ch["d" + sent]), None])
            if rng.random() < .05 and len(turns) < target - 2:
                turns.append([turns[-1][0], deck("addon", ch["addon"]), None])
        while len(turns) < 18:
            emit(filler(), 1 - turns[-1][0])
        if len(turns) + 2 <= 35:
            emit(deck("close", ch["close"]), 1 - turns[-1][0])
        sid = f"{cid}-s{si + 1:02d}"
        out = []
        for k, (spk, text, it) in enumerate(turns):
            tid = f"{sid}-t{k + 1:03d}"
            if it is not None:
                it.tid, it.text = tid, text
            out.append({"turn_id": tid, "speaker": people[spk]["name"], "text": text})
        d, h, mi = dates[si]
        sessions.append({"session_id": sid, "date": f"{d.isoformat()}T{h:02d}:{mi:02d}:00", "turns": out})
    return sessions


# ============================================================== 8. questions
def _questions(rng, lang, people, items, dates):
    en, Q, v, A = lang == "en", QT[lang], V[lang], ANS[lang]
    live = [it for it in items if it.tid]
    C = []

    def add(cat, tkey, o, ans, ev, key=None, must=None, it=None, text=None, **extra):
        s = dict(people[o]["pro"], P=people[o]["name"], Q=people[1 - o]["name"])
        if it is not None:
            s.update(it.slots)
            s.update({k: fmt(x, my=s.get("poss", "")) for k, x in s.items() if isinstance(x, str) and "{my}" in x})
        s.update(extra)
        C.append(dict(category=cat, question=fmt(text or rng.choice(Q[tkey]), **s), answer=fmt(ans, **s),
                      evidence=[e.tid for e in ev], key=key, owner=o, must=must))

    def forms(it):
        if it.kind in ("problem", "achieve"):
            pair = it.slots["v"], it.slots["p"]
        else:
            pair = FORMS[lang][it.kind + ("_" + it.slots["sub"] if it.kind == "partner_end" else "")][0]
        d = dict(people[it.owner]["pro"], **it.slots)
        d.update({k: fmt(x, my=d.get("poss", "")) for k, x in d.items() if isinstance(x, str) and "{my}" in x})
        return [fmt(x, **d) for x in pair]

    def gerund(vv):
        w, _, rest = vv.partition(" ")
        return f"{GERUND.get(w, w + 'ing')} {rest}".strip()

    def before(a, b):
        """True/False when a's window ends before b's starts (or after); None when they overlap or are vague."""
        wa, wb = [(dt.date.min,) * 2 if x.kind == "pet_own" else x.win if x.gran else None for x in (a, b)]
        if wa is None or wb is None:
            return None
        return True if wa[1] < wb[0] else False if wb[1] < wa[0] else None

    def sd(it):
        return dates[it.session][0]

    for o in (0, 1):
        def mine(*kinds, o=o):
            return [it for it in live if it.owner == o and it.kind in kinds]

        def one(kind, o=o):
            return (mine(kind, o=o) or [None])[-1]

        # ---- facts: "fact" becomes speaker when the other person has a fact under the same key, else single-hop
        pets = sorted(mine("pet_own", "adopt"), key=lambda it: (it.kind != "pet_own", it.session))
        for it in pets:
            add("fact", "petname", o, it.slots["name"], [it], ("petname", it.slots["kindn"]), it.slots["name"], it)
            add("single-hop", "petkind", o, it.slots["kindn"], [it], it=it)
        for kind, *_ in SIMPLE + (("birthday",),):
            for it in mine(kind):
                add("fact", kind, o, "{x}", [it], (kind,), it.slots["x"], it)
        J, JN, Ci, M = one("job"), one("job_new"), one("city"), one("move")
        if J and not JN:
            add("fact", "job", o, A["job"][0], [J], ("job",), J.slots["job"], J)
        if JN:
            add("update", "job_new", o, A["job"][0], [JN], ("job",), JN.slots["job"], JN)
            add("single-hop", "job_new1", o, "{org}", [JN], None, JN.slots["org"], JN)
            if J:
                add("update", "job_prev", o, A["job"][0], [J, JN], None, J.slots["job"], J)
                old = J.slots["org"]
                old = ("the " + old.split(" ", 1)[1] if old.split(" ")[0] in ("a", "an") else old) if en else (
                    "那" + old[1:] if old[0] == "一" else old)
                add("update", "job_still", o, A["job_still"][0], [JN], None, JN.slots["org"], JN, old=old)
        if Ci and not M:
            add("fact", "city", o, Ci.slots["city"], [Ci], ("city",), Ci.slots["city"], Ci)
        if M:
            add("update", "move", o, M.slots["city"], [M], ("city",), M.slots["city"], M)
            if Ci:
                old = Ci.slots["city"]
                add("update", "move_prev", o, old, [Ci, M], None, old, Ci, city=M.slots["city"])
                add("update", "move_still", o, A["move_still"][0], [M], None, M.slots["city"], M, old=old)
        DR, DN = one("drink"), one("drink_new")
        if DR and not DN:
            add("fact", "drink", o, "{x}", [DR], ("drink",), DR.slots["x"], DR)
        if DN:
            add("update", "drink_new", o, "{x}", [DN], ("drink",), DN.slots["x"], DN)
            add("update", "drink_still", o, A["drink_still"][0], [DN], None, DN.slots["x"], DN)
        sibs = mine("sib")
        for SI in sibs:
            add("fact", "sib", o, "{sname}", [SI], ("sib", SI.slots["rel"]), SI.slots["sname"], SI)
            for SC in [x for x in mine("sib_city") if x.dep is SI]:
                add("multi-hop", "sib_city", o, "{city}", [SI, SC], None, SC.slots["city"], SC)
                add("single-hop", "sib_city1", o, "{sname}", [SC], None, SC.slots["sname"], SC)
            for SE in [x for x in mine("sib_evt") if x.dep is SI]:
                add("single-hop", "sib_evt1", o, A[SE.slots["sub"]][0], [SE], it=SE)
                if SE.gran:
                    add("multi-hop", "sib_evt_" + SE.slots["sub"], o, _when(lang, SE, sd(SE)), [SI, SE], it=SE)
        if len(sibs) == 2:
            a, b = (x.slots for x in sibs)
            ans = (f"{a['sname']} ({a['rel']}) and {b['sname']} ({b['rel']})" if en
                   else f"{a['sname']}（{a['rel']}）、{b['sname']}（{b['rel']}）")
            add("multi-hop", "sibs", o, ans, sibs, r1=a["rel"], r2=b["rel"])
        F, D = one("food"), one("diet")
        if F and not D:
            add("fact", "food", o, "{food}", [F], ("food",), F.slots["food"], F)
        if D:
            add("update", "diet", o, "{diet}", [D], None, None, D)
            add("update", "diet_still", o, A["diet_still"][0], [D], None, None, D)
            if F:
                add("update", "diet_prev", o, "{food}", [D] if F.slots["food"] in D.text else [F, D], None,
                    F.slots["food"], F)
        K, KN = one("car"), one("car_new")
        if K and not KN:
            add("fact", "car", o, "{car}", [K], ("car",), K.slots["car"], K)
        if KN:
            add("update", "car_new", o, "{car2}", [KN], ("car",), KN.slots["car2"], KN)
            add("update", "car_prev", o, "{car1}", [KN], None, KN.slots["car1"], KN)
            add("update", "car_still", o, A["car_still"][0], [KN], None, KN.slots["car2"], KN)
        PI, PE = one("partner"), one("partner_end")
        if PI:
            add("fact", "meet", o, "{meet}", [PI], ("meet",), PI.slots["meet"], PI)
            if not PE:
                add("fact", "partner", o, "{pname}", [PI], ("partner",), PI.slots["pname"], PI)
        if PE:
            sub = PE.slots["sub"]
            add("update", "partner_end", o, A[sub][0], [PE], ("partner",), None, PE)
            add("single-hop", "partner_end1", o, "{pname}", [PE], None, PE.slots["pname"], PE,
                v=FORMS[lang]["partner_end_" + sub][0][0].replace(" {pname}", "") if en else A["rel_" + sub][0])
            if PI:
                rel_p = A["rel_" + sub][0]
                add("multi-hop", "meet_end", o, "{meet}", [PI, PE], None, PI.slots["meet"], PI, rel_p=rel_p)
        for it in mine("trip", "trip_with"):
            if it.slots["detail"] != v["trip_generic"][0]:
                add("fact", "trip", o, "{place}", [it], ("trip", it.slots["act"]), it.slots["place"], it)
                did = gerund(it.slots["act"]) if en else "{act}"
                add("fact", "tripdo", o, did, [it], ("tripdo", it.slots["place"]), None, it)
            if it.slots.get("comp"):
                add("single-hop", "trip_with", o, "{comp}", [it], None, it.slots["comp"].replace("{my} ", ""), it)
        for sub, slot in EVENTS.items():
            for it in mine(sub):
                add("fact", sub, o, "{" + slot + "}", [it], (sub,), it.slots[slot], it)
        for it in mine("buy"):
            qs = [q for c, q in v["buyq"] if c == it.slots["cat"]]
            add("fact", None, o, "{item}", [it], ("buy", it.slots["cat"]), it.slots["item"], it, rng.choice(qs))
        for it in mine("problem", "achieve"):
            add("fact", None, o, it.slots["a"], [it], (it.kind, it.slots["sub"]), None, it, it.slots["q"])
        for it in mine("cls"):
            add("fact", "cls", o, "{hobby}", [it], ("cls",), it.slots["hobby"], it)
        for it in mine("quit"):
            add("update", "quit", o, "{new}", [it], None, it.slots["new"], it)
            add("single-hop", "quit1", o, "{hobby}", [it], None, it.slots["hobby"], it)
            add("update", "quit_still", o, A["quit_still"][0], [it], None, it.slots["new"], it)
        for it in mine("plan"):
            add("fact", "plan", o, "{act}", [it], ("plan",), None, it)
        # ---- temporal
        dated = [it for it in live if it.owner == o and it.kind in DATED]
        exact = [it for it in dated if it.gran and it.kind != "sib_evt"]
        for it in exact:
            vv, pp = forms(it)
            add("temporal", "when_day" if it.gran == "day" else "when", o, _when(lang, it, sd(it)), [it], it=it, v=vv)
            lo, hi = it.win
            m0 = lo.replace(day=1)
            m1 = (m0 + dt.timedelta(days=32)).replace(day=1)
            if hi < m1 and not any(x is not it and x.win[0] < m1 and x.win[1] >= m0 for x in dated):
                M_ = f"{v['months'][lo.month - 1]} {lo.year}" if en else f"{lo.year}年{lo.month}月"
                add("temporal", "month", o, f"{people[o]['pro']['pr'].capitalize()} {pp}." if en else pp, [it], M=M_)
        pairs = [(a, b) for a in exact for b in exact if a.session < b.session]
        rng.shuffle(pairs)
        gaps = [(a, b) for a, b in pairs if a.gran == b.gran == "day" and (b.win[0] - a.win[0]).days >= 2][:5]
        for a, b in gaps:
            days = (b.win[0] - a.win[0]).days
            weeks = f" (about {round(days / 7)} weeks)" if en else f"（大约{round(days / 7)}周）"
            ans = (f"{days} days" if en else f"{days}天") + (weeks if days >= 14 else "")
            v1, v2 = forms(a)[0], forms(b)[0]
            add("temporal", "gap", o, ans, [a, b], v1=v1, v2=v2, g1=gerund(v1), g2=gerund(v2))
        for a, b in [p for p in pairs if p not in gaps][:4]:
            first = before(a, b)
            if first is None:
                continue
            if rng.random() < .5:
                a, b, first = b, a, not first
            v1, v2 = forms(a)[0], forms(b)[0]
            k = rng.randrange(2)
            if en:
                ans = (cap(gerund(v1 if first else v2)) + ".") if k == 0 else ("Before." if first else "After.")
            else:
                ans = f"先{v1 if first else v2}。" if k == 0 else ("之前。" if first else "之后。")
            add("temporal", None, o, ans, [a, b], text=Q["order"][k], v1=v1, v2=v2, g1=gerund(v1), g2=gerund(v2))
        # ---- multi-hop
        if len(pets) >= 2:
            ordered = [(a, b) for a in pets for b in pets if a is not b and before(a, b)]
            if ordered:
                a, b = rng.choice(ordered)
                x, y = (a, b) if rng.random() < .5 else (b, a)
                add("multi-hop", "pets_first", o, a.slots["name"], [x, y], None, a.slots["name"], a=x.slots["name"],
                    b=y.slots["name"])
            if en:
                names = [f"{p.slots['name']} (a {p.slots['kindn']})" for p in pets]
                ans = f"{cap(v['numw'][len(pets)])}: " + ", ".join(names[:-1]) + " and " + names[-1] + "."
            else:
                ans = f"{v['numw'][len(pets)]}只：" + "、".join("{name}（{kindn}）".format(**x.slots) for x in pets)
            add("multi-hop", "pet_count", o, ans, pets)
        for it in mine("vet"):
            add("multi-hop", "vet", o, "{issue}", [it.dep, it], None, None, it)
            add("single-hop", "vet1", o, "{name}", [it], None, it.slots["name"], it)
        trips = mine("trip", "trip_with")
        if len(trips) >= 2:
            places = [t.slots["place"] for t in trips]
            add("multi-hop", "trips", o, (", ".join(places[:-1]) + " and " + places[-1]) if en else "、".join(places),
                trips)
        for base, change, tkey in ((Ci, M, "city_at"), (J, JN, "job_at")):
            if base and change and change.gran:
                cands = [x for x in rng.sample(exact, len(exact)) if x is not change and before(x, change) is not None]
                for it in cands[:2]:
                    src = base if before(it, change) else change
                    ans = "{city}" if tkey == "city_at" else A["job"][0]
                    vv, pp = forms(it)
                    add("multi-hop", tkey, o, ans, [src, it], None, None, src, v=vv, p=pp)
    # ---- across both speakers
    wk = [it for it in live if it.kind == "weekend" and it.slots["shared"]]
    if len(wk) == 2:
        add("multi-hop", "weekend", rng.randrange(2), wk[0].slots["label"], wk)
    sh = [it for it in live if it.kind in ("trip", "trip_with") and it.slots["shared"]]
    if len(sh) == 2:
        add("multi-hop", "shared_trip", rng.randrange(2), sh[0].slots["place"], sh, None, sh[0].slots["place"])
    for kind, slot in (("inst", "x"), ("concert", "band"), ("grewup", "x"), ("job", "job"), ("birthday", "md")):
        both = [[it for it in live if it.owner == o and it.kind == kind] for o in (0, 1)]
        if not all(len(x) == 1 for x in both) or kind == "job" and any(it.kind == "job_new" for it in live):
            continue
        a, b = both[0][0], both[1][0]
        if kind == "birthday":
            if a.slots["md"] != b.slots["md"]:
                add("multi-hop", "birthday_first", 0, people[0 if a.slots["md"] < b.slots["md"] else 1]["name"], [a, b])
        else:
            fa, fb = (fmt(A["job"][0], **x.slots) if kind == "job" else x.slots[slot] for x in (a, b))
            add("multi-hop", "both_" + kind, 0, A["both"][0], [a, b], a=fa, b=fb)
    firsts = [min([it for it in live if it.owner == o and it.kind == "adopt" and it.gran], default=None,
                  key=lambda i: i.win[0]) for o in (0, 1)]
    if all(firsts) and before(*firsts) is not None:
        add("multi-hop", "first_adopt", 0, people[0 if before(*firsts) else 1]["name"], firsts)
    for c in C:
        if c["category"] == "fact":
            rival = any(d["key"] == c["key"] and d["owner"] != c["owner"] and d["answer"] != c["answer"] for d in C)
            c["category"] = "speaker" if rival else "single-hop"
    return C


def _select(rng, C):
    seen, pools = set(), {c: [] for c in CATS}
    for c in C:
        if c["question"] not in seen:
            seen.add(c["question"])
            pools[c["category"]].append(c)
    fit = min(len(pools[c]) / SHARE[c] for c in CATS)  # the most questions the category mix allows
    total = max(120, min(rng.randint(130, 190), round(1.1 * fit)))
    chosen, rest = [], []
    for cat in CATS:
        rng.shuffle(pools[cat])
        k = round(total * SHARE[cat])
        chosen += pools[cat][:k]
        rest += pools[cat][k:] if cat in ("single-hop", "temporal", "multi-hop") else []
    rng.shuffle(rest)
    chosen += rest[:max(0, total - len(chosen))]
    rng.shuffle(chosen)
    return chosen


# ============================================================== 9. generate, validate, CLI
def _conversation(rng, lang, cid, pair):
    people = [_person(lang, n, g) for n, g in pair]
    items = _life(rng, lang, people)
    n = rng.randint(15, 25)
    d = dt.date(2022, 1, 3) + dt.timedelta(days=rng.randint(0, 540))
    dates = []
    for _ in range(n):
        dates.append((d, rng.choice([17, 18, 19, 20, 20, 21, 21, 22]), rng.choice([0, 15, 30, 45])))
        d += dt.timedelta(days=rng.choice([3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 21, 25]))
    _schedule(rng, items, n)
    _assign_times(rng, lang, items, dates)
    sessions = _render(rng, lang, cid, people, items, dates)
    text = {t["turn_id"]: t["text"] for s in sessions for t in s["turns"]}
    questions = []
    for k, c in enumerate(_select(rng, _questions(rng, lang, people, items, dates))):
        if c["must"] and not any(c["must"].lower() in text[e].lower() for e in c["evidence"]):
            raise ValueError(f"{cid}: answer {c['must']!r} is not in the evidence of {c['question']!r}")
        questions.append({"qid": f"{cid}-q{k + 1:03d}", "question": c["question"], "category": c["category"],
                          "evidence": c["evidence"], "answer": c["answer"]})
    return {"conv_id": cid, "lang": lang, "speakers": [p["name"] for p in people], "sessions": sessions,
            "questions": questions}


def _validate(data):
    ids = set()
    for c in data:
        turns, prev = set(), ""
        for s in c["sessions"]:
            if s["date"] <= prev or s["session_id"] in ids:
                raise ValueError(f"bad or repeated session {s['session_id']}")
            prev = s["date"]
            ids.add(s["session_id"])
            for t in s["turns"]:
                if t["turn_id"] in ids or t["speaker"] not in c["speakers"] or not t["text"]:
                    raise ValueError(f"bad turn {t['turn_id']}")
                ids.add(t["turn_id"])
                turns.add(t["turn_id"])
        for q in c["questions"]:
            if q["qid"] in ids or q["category"] not in CATS or not q["answer"] or not q["question"]:
                raise ValueError(f"bad question {q['qid']}")
            ids.add(q["qid"])
            ev = q["evidence"]
            if not ev or any(e not in turns for e in ev) or len(set(ev)) < len(ev):
                raise ValueError(f"bad evidence for {q['qid']}: {ev}")


def generate(lang="en", conversations=10, seed=0):
    """The benchmark: `conversations` conversations in `lang` ("en" or "zh"); same arguments, same output."""
    if lang not in V:
        raise ValueError(f"lang must be one of {sorted(V)}")
    rng = random.Random(f"convmem/{lang}/{seed}")
    names = rng.sample(V[lang]["names"], len(V[lang]["names"]))
    data = [_conversation(random.Random(f"convmem/{lang}/{seed}/{ci}"), lang, f"{lang}-{ci:02d}",
                          [names[(2 * ci) % len(names)], names[(2 * ci + 1) % len(names)]])
            for ci in range(conversations)]
    _validate(data)
    return data


def _stats(data):
    n_s = sum(len(c["sessions"]) for c in data)
    n_t = sum(len(s["turns"]) for c in data for s in c["sessions"])
    qs = [q for c in data for q in c["questions"]]
    print(f"conversations {len(data)}  sessions {n_s}  turns {n_t}  questions {len(qs)}")
    k = len(data)
    print(f"per conversation: sessions {n_s / k:.1f}  turns {n_t / k:.1f}  questions {len(qs) / k:.1f}")
    for cat in CATS:
        k = sum(q["category"] == cat for q in qs)
        print(f"  {cat:<11} {k:5d}  {100 * k / max(1, len(qs)):5.1f}%")
    cited = len({e for q in qs for e in q["evidence"]})
    print(f"evidence turns per question {sum(len(q['evidence']) for q in qs) / max(1, len(qs)):.2f}; "
          f"distinct evidence turns {cited} ({100 * cited / n_t:.1f}% of all turns)")


def _dump(conv):
    text = {t["turn_id"]: (t["speaker"], t["text"]) for s in conv["sessions"] for t in s["turns"]}
    print(f"== {conv['conv_id']}  speakers: {', '.join(conv['speakers'])}  sessions: {len(conv['sessions'])}")
    for s in conv["sessions"][:2]:
        print(f"\n-- {s['session_id']}  {s['date']}")
        for t in s["turns"]:
            print(f"  [{t['turn_id'][-4:]}] {t['speaker']}: {t['text']}")
    print("\n-- questions")
    for q in conv["questions"][:10]:
        print(f"\n{q['qid']} [{q['category']}] {q['question']}\n   answer: {q['answer']}")
        for e in q["evidence"]:
            print(f"   {e}  {text[e][0]}: {text[e][1]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description="ConvMem: a synthetic conversational-evidence benchmark (en, zh).")
    ap.add_argument("--lang", default="en", choices=sorted(V))
    ap.add_argument("--conversations", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stats", action="store_true", help="print counts")
    ap.add_argument("--dump", type=int, metavar="N", help="print conversation N's first 2 sessions and 10 questions")
    ap.add_argument("--out", metavar="PATH", help="write the data set as JSON")
    a = ap.parse_args(argv)
    data = generate(a.lang, a.conversations, a.seed)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
    if a.dump is not None:
        _dump(data[a.dump])
    if a.stats or (a.dump is None and not a.out):
        _stats(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
