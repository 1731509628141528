"""A Latin word written against Chinese text (a name, a brand) is a word of its own, and the CJK
run beside it is split into bigrams as anywhere else: the word alternative used to swallow the run,
so "Bart在圣诞节晚会上跳舞" was one token that no query ever matched."""

from hindbrain import Brain
from hindbrain.recall.tokenize import py_tokens, tokens


def test_a_latin_name_ends_where_the_chinese_starts():
    text = "Lisa与表妹Emily一起画画。iPhone很好用"
    expected = ["lisa", "与表", "表妹", "emily", "一起", "起画", "画画", "iphone", "很好", "好用"]
    assert py_tokens(text) == expected
    assert tokens(text) == expected  # the C loop keeps to its oracle


def test_a_joined_word_stops_at_a_cjk_character_too():
    assert tokens("error-503在这里") == ["error-503", "error", "503", "在这", "这里"]
    assert tokens("abc-表妹") == ["abc", "表妹"]
    assert tokens("我在2023年去了北京") == ["我在", "2023", "年去", "去了", "了北", "北京"]  # digits too


def test_a_chinese_memory_naming_someone_in_latin_letters_is_found_by_its_words(tmp_path):
    with Brain.open(tmp_path / "home", embedder="none") as brain:
        brain.perceive(tenant="t", agent="a", kind="observation", text="Bart在圣诞节晚会上跳舞，感觉非常开心。",
                       event_id="dance")
        brain.perceive(tenant="t", agent="a", kind="observation", text="Bart周末在家看动画片。", event_id="cartoon")
        pack = brain.recall(tenant="t", agent="a", query="圣诞节晚会", layers=["episodic"], k=1)
        assert [e for item in pack.items for e in (item.event_ids or [item.id])] == ["dance"]
