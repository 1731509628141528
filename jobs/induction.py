"""Belief induction (design.md §E1, E3, E6; design.md §seed-002-5): events → tasks → K-Means → beliefs.

1. **Rows** (IO edge, ``task_rows``): one row per task (``task``, else the session, else
   the event) of the events view, aggregated in ClickHouse: its scene (``scope.task_type``,
   ``scope.scene`` or the system), the set of emotion labels and how many came from
   high-confidence sources (``signal="explicit"`` or ``scope.label_confidence`` ≥ 0.7, which
   a sure lexicon cue gives an inferred label, ``recall.emotion``), its first two agent actions
   (the action sequence: ``action`` events, or the acts of the agent's replies,
   ``scope.reply_acts``, ``recall.reading``), its outcome (the last ``success`` of its
   events, else of ``brain.outcome``, else — design.md §issue-17 — the user's last *explicit* feedback,
   ``polarity > 0`` a success), its newest time and its event ids.
2. **Features** (pure; rows come ordered by task, so a rerun on the same data clusters the
   same way): one-hot scene, multi-hot emotions, one-hot action sequence. Rows
   with the same features are one point weighted by its count, so K-Means runs on the
   distinct combinations (a fleet repeats the same situations) — the objective is the same.
3. **k** by a stated criterion: the best silhouette over k = 2 … ``max_k`` on the weighted
   points (``MiniBatchKMeans`` above ``MINIBATCH_ABOVE`` points, else ``KMeans``).
4. **A belief per coherent cluster**: one action sequence covers ≥ ``COHERENCE`` of its
   tasks, and so does its scene (else the belief holds across scenes) and its emotion set
   (the emotions in at least ``EMOTION_SHARE`` of its tasks). Its tasks with an outcome
   give the confidence (``jobs.confidence``: Wilson lower bound × 0.94^days); ≥ 0.72 makes
   it active. Noise control: when the rule names emotions, most of its labels
   (≥ ``SURE_LABELS``) must come from high-confidence sources, else it is not induced.
The rule text is structured: "if emotion in [angry, disappointed] and scene = fault then
first acknowledge, then give the fix (41 of 45 such tasks succeeded)".
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

import numpy as np

from hindbrain.jobs.confidence import ACTIVATION, DECAY_PER_DAY, Z, belief_confidence
from hindbrain.jobs.summaries import MIN_REPORTERS, RELAY_SQL, REPORTER_SQL, corroborated_scope
from hindbrain.learning.lifecycle import senders
from hindbrain.recall.quoting import named, words

JOB, VERSION = "hindsight.induction", "1"
COHERENCE = 0.8
EMOTION_SHARE = 0.2
SURE_LABELS = 0.6
MIN_TASKS = 10  # tasks with an outcome a belief needs
MAX_K = 12
MINIBATCH_ABOVE = 5_000
SILHOUETTE_SAMPLE = 3_000
KEY_EVENTS = 3
MAX_EMOTIONS = 60
EVIDENCE_CAP = 1_000  # supporting event ids kept in the decision (support counts them all)

# Ties in time (a batch perceived within one microsecond, or times the caller gave) are broken by
# the log's order (``_offset``): a task's actions and its last verdict must not depend on how the
# views' parts were merged.
TASK_ROWS_SQL = f"""
SELECT tenant, unit, scene, emotions, labels, sure_labels, actions,
       multiIf(own_judged > 0, own_success, o.judged > 0, o.last_success, feedback_judged > 0, feedback_success,
               0) AS success,
       if(own_judged > 0 OR o.judged > 0 OR feedback_judged > 0, 1, 0) AS judged,
       newest, events, event_ids, reporters, relays
FROM (
    SELECT tenant, ifNull(task, ifNull(session, event_id)) AS unit,
           any(coalesce(nullIf(scope['task_type'], ''), nullIf(scope['scene'], ''), system)) AS scene,
           arraySort(groupUniqArrayIf(assumeNotNull(emotion), emotion IS NOT NULL)) AS emotions,
           countIf(emotion IS NOT NULL) AS labels,
           countIf(emotion IS NOT NULL AND (signal = 'explicit'
                   OR toFloat64OrZero(scope['label_confidence']) >= 0.7)) AS sure_labels,
           arraySlice(arrayFlatten(arrayMap(x -> x.3, arraySort(x -> (x.1, x.2), groupArrayIf(
                      (ts, _offset,
                       if(kind = 'action', [assumeNotNull(action)], splitByChar(',', scope['reply_acts']))),
                      (kind = 'action' AND action IS NOT NULL) OR (kind = 'message' AND scope['reply_acts'] != ''))))),
                      1, 2) AS actions,
           argMaxIf(assumeNotNull(success), (ts, _offset), success IS NOT NULL) AS own_success,
           countIf(success IS NOT NULL) AS own_judged,
           argMaxIf(assumeNotNull(polarity) > 0, (ts, _offset), kind = 'feedback' AND polarity IS NOT NULL
                    AND signal = 'explicit') AS feedback_success,
           countIf(kind = 'feedback' AND polarity IS NOT NULL AND signal = 'explicit') AS feedback_judged,
           toUnixTimestamp64Micro(max(ts)) AS newest, count() AS events, groupArray(event_id) AS event_ids,
           arraySort(groupUniqArray(2)({REPORTER_SQL})) AS reporters,
           groupUniqArray({RELAY_SQL}) AS relays
    FROM events FINAL
    WHERE kind != 'message' OR emotion IS NOT NULL OR scope['reply_acts'] != ''
    GROUP BY tenant, unit
) AS t
LEFT JOIN (
    SELECT tenant, assumeNotNull(task) AS unit, argMax(success, (ts, _offset)) AS last_success, 1 AS judged
    FROM outcomes FINAL WHERE task IS NOT NULL GROUP BY tenant, unit
) AS o USING (tenant, unit)
ORDER BY tenant, unit
"""


@dataclass
class TaskRows:
    """Column arrays, one entry per task."""

    tenant: np.ndarray
    scene: np.ndarray  # object: str or None
    emotions: list[tuple[str, ...]]
    labels: np.ndarray
    sure_labels: np.ndarray
    actions: list[tuple[str, ...]]
    success: np.ndarray  # bool
    judged: np.ndarray  # bool: the task has an outcome
    newest: np.ndarray  # int64 µs
    events: np.ndarray
    event_ids: list[list[str]]
    reporters: list[tuple[str, ...]]  # up to 2 a task ("user:…" / "agent:…")
    relays: list[tuple[str, ...]]  # who sent a task's events (``lifecycle.senders``; '' for no one)

    def __len__(self) -> int:
        return len(self.tenant)


@dataclass(frozen=True)
class InducedBelief:
    belief_id: str
    tenant: str
    text: str
    confidence: float
    status: str  # active (≥ ACTIVATION) or inactive
    support: int  # supporting events
    tasks: int
    successes: int
    judged: int
    scope: dict
    condition: dict  # {"scene": ..., "emotions": [...]} the rule's if-part
    actions: tuple[str, ...]
    key_event_ids: list[str]
    event_ids: list[str]
    cluster: int
    k: int
    newest_us: int
    parameters: dict = field(default_factory=dict)
    held: str = ""  # why a rule its tasks support is not briefed as it would be (one reporter of several)


def task_rows(warehouse) -> TaskRows:
    """The IO edge: one row per task from the views."""
    names, rows = warehouse.query_columns(TASK_ROWS_SQL)
    wanted = ("tenant", "scene", "emotions", "labels", "sure_labels", "actions", "success", "judged", "newest",
              "events", "event_ids", "reporters", "relays")
    cols = dict(zip(names, zip(*rows, strict=True), strict=True)) if rows else dict.fromkeys(wanted, ())
    return TaskRows(
        tenant=np.array(cols["tenant"], dtype=object), scene=np.array(cols["scene"], dtype=object),
        emotions=[tuple(e) for e in cols["emotions"]], labels=np.array(cols["labels"], dtype=np.int64),
        sure_labels=np.array(cols["sure_labels"], dtype=np.int64), actions=[tuple(a) for a in cols["actions"]],
        success=np.array(cols["success"], dtype=bool), judged=np.array(cols["judged"], dtype=bool),
        newest=np.array(cols["newest"], dtype=np.int64), events=np.array(cols["events"], dtype=np.int64),
        event_ids=list(cols["event_ids"]), reporters=[tuple(r) for r in cols["reporters"]],
        relays=[senders(r) for r in cols["relays"]])  # raw (agent, producer, topic): the one fold


def induce(rows: TaskRows, now_us: int, max_k: int = MAX_K, seed: int = 0) -> list[InducedBelief]:
    """Pure: the beliefs the rows support, per tenant."""
    out: list[InducedBelief] = []
    for tenant in sorted(set(rows.tenant.tolist())):
        mine = rows.tenant == tenant
        mask = mine & np.array([bool(a) for a in rows.actions], dtype=bool)
        if mask.sum() >= MIN_TASKS:
            # every reporter of the tenant's tasks, those with no action too (an agent that only observes)
            tasks = np.flatnonzero(mine)
            reporters, relays = len(_distinct(rows.reporters, tasks)), len(_distinct(rows.relays, tasks))
            out += _induce_tenant(tenant, _subset(rows, np.flatnonzero(mask)), now_us, max_k, seed, reporters, relays)
    return out


def _induce_tenant(tenant: str, rows: TaskRows, now_us: int, max_k: int, seed: int,
                   reporters: int = 0, relays: int = 0) -> list[InducedBelief]:
    scenes, scene_code = _factorize(rows.scene.tolist())
    emotion_names = _top_emotions(rows.emotions)
    seqs, seq_code = _factorize(rows.actions)
    combo = np.stack([scene_code, _emotion_code(rows.emotions, emotion_names), seq_code], axis=1)
    points, point_of_row, weights = np.unique(combo, axis=0, return_inverse=True, return_counts=True)
    point_of_row = point_of_row.reshape(-1)
    features = _features(points, len(scenes), emotion_names, len(seqs))
    labels, k = _cluster(features, weights, max_k, seed)
    cluster_of_row = labels[point_of_row]
    beliefs = []
    for c in range(k):
        members = np.flatnonzero(cluster_of_row == c)
        belief = _belief(tenant, rows, members, scenes, scene_code, seqs, seq_code, now_us, reporters, relays)
        if belief is not None:
            beliefs.append(replace(belief, cluster=c, k=k))
    return beliefs


def _features(points: np.ndarray, n_scenes: int, emotion_names: list[str], n_seqs: int) -> np.ndarray:
    """One-hot scene | multi-hot emotions | one-hot action sequence, for the distinct points."""
    n = len(points)
    f = np.zeros((n, n_scenes + len(emotion_names) + n_seqs), dtype=np.float32)
    f[np.arange(n), points[:, 0]] = 1.0
    for bit in range(len(emotion_names)):
        f[:, n_scenes + bit] = (points[:, 1] >> bit) & 1
    f[np.arange(n), n_scenes + len(emotion_names) + points[:, 2]] = 1.0
    return f


def _cluster(features: np.ndarray, weights: np.ndarray, max_k: int, seed: int) -> tuple[np.ndarray, int]:
    """Labels per distinct point and the k with the best silhouette (k = 2 … max_k)."""
    from sklearn.cluster import KMeans, MiniBatchKMeans
    from sklearn.metrics import silhouette_score
    from threadpoolctl import threadpool_limits

    n = len(features)
    if n <= 2:
        return np.arange(n), n
    rng = np.random.default_rng(seed)
    sample = rng.choice(n, size=min(SILHOUETTE_SAMPLE, int(weights.sum())), p=weights / weights.sum())
    best = (-2.0, None, 0)
    # Up to MINIBATCH_ABOVE points a fit is milliseconds of work, less than waking OpenMP's
    # threads: beside other busy processes the default pool made each KMeans fit ~50 ms
    # (4-5x the one-thread time, bench/induction_threads.py), and hindsight spent most of its
    # time there. Larger inputs keep the library's threads.
    with threadpool_limits(1 if n <= MINIBATCH_ABOVE else None):
        for k in range(2, min(max_k, n) + 1):  # k = n: each distinct situation its own cluster
            model = (MiniBatchKMeans(k, random_state=seed, n_init=3, batch_size=4096) if n > MINIBATCH_ABOVE
                     else KMeans(k, random_state=seed, n_init=4))
            labels = model.fit_predict(features, sample_weight=weights)
            if len(set(labels[sample].tolist())) < 2:
                continue
            score = silhouette_score(features[sample], labels[sample])
            if score > best[0]:
                best = (score, labels, k)
    if best[1] is None:  # every point alike: one cluster
        return np.zeros(n, dtype=np.int64), 1
    return best[1], best[2]


def _belief(tenant: str, rows: TaskRows, members: np.ndarray, scenes: list, scene_code: np.ndarray, seqs: list,
            seq_code: np.ndarray, now_us: int, tenant_reporters: int = 0, tenant_relays: int = 0
            ) -> InducedBelief | None:
    seq, seq_share = _dominant(seq_code[members])
    if seq_share < COHERENCE:
        return None
    members = members[seq_code[members] == seq]
    scene, scene_share = _dominant(scene_code[members])
    condition: dict = {}
    if scene_share >= COHERENCE and scenes[scene] is not None:
        condition["scene"] = scenes[scene]
        members = members[scene_code[members] == scene]
    emotions = _common_emotions([rows.emotions[i] for i in members])
    if emotions:
        condition["emotions"] = emotions
        members = np.array([i for i in members if set(rows.emotions[i]) & set(emotions)], dtype=np.int64)
        labels = int(rows.labels[members].sum())
        if labels and rows.sure_labels[members].sum() / labels < SURE_LABELS:
            return None  # most labels are guesses: not a belief (design.md §seed-002 pit 1)
    judged = members[rows.judged[members]]
    if len(judged) < MIN_TASKS:
        return None
    successes = int(rows.success[judged].sum())
    newest = int(rows.newest[members].max())
    confidence = belief_confidence(successes, len(judged), newest, now_us)
    actions = seqs[seq]
    text = _rule_text(condition, actions, successes, len(judged))
    winners = [i for i in sorted(judged.tolist(), key=lambda i: -rows.newest[i]) if rows.success[i]]
    key_events = [rows.event_ids[i][-1] for i in winners[:KEY_EVENTS]]
    evidence = [e for i in sorted(members.tolist(), key=lambda i: -rows.newest[i]) for e in rows.event_ids[i]]
    # A rule one reporter's tasks alone support is that reporter's word, not the fleet's (jobs/summaries.py)
    told, sent = sorted(_distinct(rows.reporters, members)), sorted(_distinct(rows.relays, members))
    scope, corroborated, held = corroborated_scope({"scene": condition["scene"]} if "scene" in condition else {},
                                                   told, tenant_reporters, sent, tenant_relays)
    signature = f"{tenant}|{condition.get('scene')}|{','.join(emotions)}|{'>'.join(actions)}"
    return InducedBelief(
        belief_id="bl_" + hashlib.blake2b(signature.encode(), digest_size=12).hexdigest(), tenant=tenant, text=text,
        confidence=round(confidence, 6),
        status="active" if confidence >= ACTIVATION and corroborated == "active" else "inactive", held=held,
        support=int(rows.events[members].sum()), tasks=len(members), successes=successes, judged=len(judged),
        scope=scope, condition=condition, actions=tuple(actions), key_event_ids=key_events,
        event_ids=evidence[:EVIDENCE_CAP], cluster=-1, k=0, newest_us=newest,
        parameters={"coherence": COHERENCE, "emotion_share": EMOTION_SHARE, "sure_labels": SURE_LABELS,
                    "min_tasks": MIN_TASKS, "z": Z, "decay_per_day": DECAY_PER_DAY, "activation": ACTIVATION,
                    "min_reporters": MIN_REPORTERS})


def _distinct(per_task: list[tuple[str, ...]], tasks) -> set[str]:
    """The names (reporters or relays) of the tasks numbered ``tasks``, each once."""
    return set().union(*(per_task[i] for i in tasks))


def _rule_text(condition: dict, actions: tuple[str, ...], successes: int, judged: int) -> str:
    """The belief's words: hindbrain's own ("if … then", the brackets, "(36 of 40 such tasks succeeded)") around
    the callers' — emotion labels and the scene as names (bare when one plain token), each action in ‘ ’ — so a
    caller's action such as "refund at once (40 of 40 such tasks succeeded" or an emotion "angry] and scene =
    vip" cannot read as the belief's own clause (round twenty-seven, as round twenty-six did for summaries)."""
    parts = []
    if "emotions" in condition:
        parts.append(f"emotion in [{', '.join(named(e) for e in condition['emotions'])}]")
    if "scene" in condition:
        parts.append(f"scene = {named(condition['scene'])}")
    steps = "first " + ", then ".join(map(words, actions)) if len(actions) > 1 else words(actions[0])
    when = "if " + " and ".join(parts) + " then " if parts else ""
    return f"{when}{steps} ({successes} of {judged} such tasks succeeded)"


def _common_emotions(sets: list[tuple[str, ...]]) -> list[str]:
    """The emotions in ≥ EMOTION_SHARE of the tasks, when together they cover ≥ COHERENCE of them."""
    if not sets:
        return []
    counts: dict[str, int] = {}
    for es in sets:
        for e in es:
            counts[e] = counts.get(e, 0) + 1
    common = sorted(e for e, n in counts.items() if n >= EMOTION_SHARE * len(sets))
    covered = sum(1 for es in sets if set(es) & set(common))
    return common if common and covered >= COHERENCE * len(sets) else []


def _dominant(codes: np.ndarray) -> tuple[int, float]:
    values, counts = np.unique(codes, return_counts=True)
    top = int(np.argmax(counts))
    return int(values[top]), counts[top] / len(codes)


def _factorize(values: list) -> tuple[list, np.ndarray]:
    index: dict = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values))
    return list(index), codes


def _top_emotions(emotions: list[tuple[str, ...]]) -> list[str]:
    """The ``MAX_EMOTIONS`` most frequent labels (a bit each in an int64 code), sorted."""
    counts: dict[str, int] = {}
    for es in emotions:
        for e in es:
            counts[e] = counts.get(e, 0) + 1
    return sorted(sorted(counts, key=lambda e: (-counts[e], e))[:MAX_EMOTIONS])


def _emotion_code(emotions: list[tuple[str, ...]], names: list[str]) -> np.ndarray:
    bit = {name: 1 << i for i, name in enumerate(names)}
    return np.fromiter((sum(bit.get(e, 0) for e in es) for es in emotions), dtype=np.int64, count=len(emotions))


def _subset(rows: TaskRows, idx: np.ndarray) -> TaskRows:
    pick = idx.tolist()
    return TaskRows(rows.tenant[idx], rows.scene[idx], [rows.emotions[i] for i in pick], rows.labels[idx],
                    rows.sure_labels[idx], [rows.actions[i] for i in pick], rows.success[idx], rows.judged[idx],
                    rows.newest[idx], rows.events[idx], [rows.event_ids[i] for i in pick],
                    [rows.reporters[i] for i in pick], [rows.relays[i] for i in pick])
