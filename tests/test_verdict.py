"""Issue 38, item 3: the claim-pairs reader of True/False verdicts, and NoCha's denominator
(the pairs the model processed) beside kitab's (every pair)."""

from __future__ import annotations

import pytest

from kitab.release.claims import _scores, pair_rows, read_verdict, score_claims

NOCHA_GEMINI = (  # NoCha's data_sample.json, response-gemini (its prompt.txt's format)
    "<explanation>The statement is false because while Beth's illness is mentioned as a reason for a quiet "
    "wedding, it is not her death that is the cause. Beth is still alive when Amy and Laurie get married. "
    "</explanation>\n <answer>FALSE</answer>"
)


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("True", True),
        ("false\nNo such book.", False),
        ("**Answer:** TRUE — she did.", True),
        ("Answer: TRUE", True),
        ("Final answer: false", False),
        ("Verdict - True", True),
        ("The claim is false.", False),
        ("The claim is not true.", False),
        ("This is not true.", False),
        ("The statement is correct.", True),
        ('{"answer": true}', True),
        ('{"answer": "FALSE"}', False),
        ('```json\n{"verdict": "false"}\n```', False),
        ("<think>Maybe false? Let me check: it is true.</think>\nAnswer: TRUE", True),
        ("<think>\nShe wrote it in 1987, so false... no, true.\n</think>\n\nFalse", False),
        ("the template opened the block; true? false?</think>\nTrue", True),  # leading, unclosed in the text
        ("<think>the answer was cut here, true", None),  # opened, never closed: no answer
        (NOCHA_GEMINI, False),  # its explanation says "false" and "alive": only <answer> is read
        ("<explanation>It is false that she was born there.</explanation><answer>TRUE</answer>", True),
        ("<answer>True</answer of>\n<question>What is the most likely meaning?</question>", True),  # NoCha's gemma
        ("<answer>True</answer>\n<answer>False</answer>", None),  # contradicts itself
        ("<explanation>x</explanation><answer>The statement is true.</answer>", True),
        ("It could be true or false.", None),
        ("I cannot say.", None),
        ("SKIPPED", None),
        ("", None),
        (None, None),
    ],
)
def test_a_response_reads_as_true_false_or_no_answer(text, verdict):
    assert read_verdict(text) is verdict


def test_nochas_denominator_is_the_pairs_processed_beside_kitabs_every_pair():
    claims = [
        {"query_id": f"p{p}:{pos}", "pair_id": f"p{p}", "position": pos, "author_qid": f"Q{p % 3}", "kind": "year",
         "constraint_type": None, "sitelinks": 10, "label": pos == 1}
        for p in range(4) for pos in (1, 2)
    ]  # fmt: skip
    answers = {  # pair 0 right, pair 1 wrong, pair 2 half answered, pair 3 unanswered
        ("p0:1", 0): "True", ("p0:2", 0): "False", ("p1:1", 0): "True", ("p1:2", 0): "True", ("p2:1", 0): "True",
    }  # fmt: skip
    rows = score_claims(claims, {k: {"response": v} for k, v in answers.items()}, {"model": "m"})
    scores = _scores(rows, pair_rows(rows), b=50, seed=1)
    assert (scores["pairs"], scores["pairs_processed"]) == (4, 2)
    assert scores["pair_accuracy"]["value"] == 0.25  # 1 of every 4 pairs
    assert scores["pair_accuracy_processed"]["value"] == 0.5  # 1 of the 2 the model processed
