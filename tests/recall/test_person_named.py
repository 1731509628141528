"""design.md §issue-29: a reply to a user names them in its words ("How does Lin like answers?") without passing
``user``; the recall is then for that user — her stated preferences are in scope, nobody else's."""

from hindbrain import Brain


def test_the_user_a_query_names_is_whose_recall_it_is(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        b.perceive(tenant="t", agent="a1", task="s1", session="s1", kind="message", speaker="Lin",
                   text="以后请用中文回复我，简短一点就好。", signal="explicit")
        b.perceive(tenant="t", agent="a1", task="s2", session="s2", kind="message", speaker="Oliver",
                   text="Please give me detailed answers with the full reasoning, in English.", signal="explicit")
        b.perceive(tenant="t", agent="a1", task="s2", session="s2", kind="message", speaker="Oliver",
                   text="when is the next maintenance window?")

        def personal(query):
            pack = b.recall(tenant="t", agent="a1", task="s9", query=query)
            return {i.scope.get("user") for i in pack.items if i.kind == "fragment"}, pack

        lin, pack = personal("Lin asks: when is the next maintenance window. How does Lin like answers?")
        assert lin == {"Lin"} and "Oliver" not in pack.render()  # Oliver's turns are his conversation
        oliver, _ = personal("Oliver asks: how do I rotate my key. How does Oliver like answers?")
        assert oliver == {"Oliver"}
        both, _ = personal("How do Lin and Oliver like answers?")
        assert both == set()  # two people named: whose recall it is stays open, no one's preference leaks
        nobody, _ = personal("when is the next maintenance window?")
        assert nobody == set()
