"""The models file of kitab cycle (kitab/release/models_file.py): a good file read whole, and
every kind of mistake one line naming the file, the model and the key."""

from __future__ import annotations

import pytest

from kitab.core.env import PROJECT_ROOT
from kitab.core.errors import BadValue
from kitab.release.models_file import parse_models, read_models

GOOD = """
[[model]]
name = "alpha"
base_url = "http://127.0.0.1:8000/v1"
model = "served-a"
api_key_env = "ALPHA_KEY"
temperature = 0.2
max_tokens = 300
concurrency = 2
budget = 500
rate = 1.5
timeout = 30

[[model]]
name = "beta.v2"
base_url = "https://api.example.org/v1"
model = "served-b"
max_completion_tokens = 800
"""


def test_a_good_file_gives_each_model_its_parameters_and_policy():
    alpha, beta = parse_models(GOOD, "models.toml")
    assert (alpha.name, alpha.model, alpha.api_key_env, alpha.budget) == ("alpha", "served-a", "ALPHA_KEY", 500)
    assert alpha.params(400).payload() == {"temperature": 0.2, "max_tokens": 300}
    policy = alpha.policy(120)
    assert (policy.concurrency, policy.rate, policy.timeout, policy.budget) == (2, 1.5, 30, 120)
    assert alpha.key().env == "ALPHA_KEY" and alpha.key().required
    # unset values: the task's answer length, the library's temperature, no key at all
    assert beta.params(400).payload()["max_completion_tokens"] == 800 and "max_tokens" not in beta.params(400).payload()
    assert beta.key().env is None and beta.budget is None
    # one default temperature: the models file's, kitab answer's and the library's are the same request
    from kitab.core.policy import DEFAULT_TEMPERATURE
    from kitab.sources.chat import Params

    assert beta.params(400).payload()["temperature"] == DEFAULT_TEMPERATURE == Params().temperature


def test_temperature_none_sends_none():
    [model] = parse_models("[[model]]\nname='r'\nbase_url='http://h/v1'\nmodel='m'\ntemperature='none'\n", "f.toml")
    assert "temperature" not in model.params(100).payload()


@pytest.mark.parametrize("name", ["models.toml", "fake-models.toml"])
def test_the_examples_in_docs_are_good_files(name):
    models = read_models(PROJECT_ROOT / "docs" / "examples" / name)
    assert len(models) == 2


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\ncolour='red'\n", "model 'a': unknown key 'colour'"),
        ("[[model]]\nname='a'\nbase_url='http://h/v1'\n", "model 'a': model is missing"),
        ("[[model]]\nbase_url='http://h/v1'\nmodel='m'\n", "model #1: name is missing"),
        ("[[model]]\nname='a/b'\nbase_url='http://h/v1'\nmodel='m'\n", "model 'a/b': name = 'a/b'"),
        ("[[model]]\nname='a'\nbase_url='ftp://h'\nmodel='m'\n", "model 'a': base_url:"),
        (
            "[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\nbudget=0\n",
            "model 'a': budget = 0: expected a whole",
        ),
        ("[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\nbudget=2.5\n", "budget = 2.5: expected a whole"),
        ("[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\nrate=0\n", "rate = 0: expected a number above 0"),
        ("[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\ntimeout='9'\n", "timeout = '9': expected a number"),
        ("[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\nconcurrency=true\n", "concurrency = True"),
        ("[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\ntemperature=-1\n", "model 'a': temperature -1"),
        ("[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\ntemperature='hot'\n", "temperature 'hot'"),
        (
            "[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\nmax_tokens=5\nmax_completion_tokens=5\n",
            "max_tokens and max_completion_tokens: give one, not both",
        ),
        ("[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\napi_key_env='MY KEY'\n", "api_key_env = 'MY KEY'"),
        (
            "[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\n[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='n'\n",
            "model 'a': name 'a' is given twice",
        ),
        ("[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel=''\n", "model 'a': model = '': expected a non-empty"),
        ("title = 'x'\n", "unknown key 'title'"),
        ("", "no [[model]] table"),
        ("[[model]\n", "not TOML"),
        ("model = 'x'\n", "expected [[model]] tables"),
    ],
)
def test_a_mistake_is_one_line_naming_file_model_and_key(text, says):
    with pytest.raises(BadValue) as caught:
        parse_models(text, "models.toml")
    message = str(caught.value)
    assert message.startswith("models.toml: ") and says in message
    assert "\n" not in message


def test_a_missing_or_unreadable_file_is_one_line(tmp_path):
    with pytest.raises(BadValue, match="no such models file"):
        read_models(tmp_path / "none.toml")
    with pytest.raises(BadValue, match="a folder"):
        read_models(tmp_path)
    (tmp_path / "bad.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(BadValue, match="not UTF-8"):
        read_models(tmp_path / "bad.toml")


def test_a_models_limit_is_its_own_sample_size():
    text = "[[model]]\nname='big'\nbase_url='http://h/v1'\nmodel='m'\nlimit=40\n"
    text += "[[model]]\nname='fake'\nbase_url='http://h/v1'\nmodel='f'\n"
    big, fake = parse_models(text, "f.toml")
    assert (big.limit, fake.limit) == (40, None)
    with pytest.raises(BadValue, match="limit = 0"):
        parse_models("[[model]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\nlimit=0\n", "f.toml")
