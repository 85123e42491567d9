"""Each call of the local model samples with a seed of its own request, not of call order."""

from __future__ import annotations

from atom_agent.models.local import LocalChatModel

ASK = [{"role": "user", "content": "Write f(x) that returns x squared."}]
OTHER = [{"role": "user", "content": "Write g(x) that returns x cubed."}]


def test_a_request_gets_the_same_seeds_whatever_was_asked_before() -> None:
    first, second = LocalChatModel(), LocalChatModel()
    seeds = [first._call_seed(ASK, 0.8) for _ in range(3)]
    second._call_seed(OTHER, 0.8)  # other requests in between change nothing
    second._call_seed(ASK, 0.4)
    assert [second._call_seed(ASK, 0.8) for _ in range(3)] == seeds
    # A repeated request (another witness of the same prompt) is another sample.
    assert len(set(seeds)) == 3
    assert all(0 <= s < 2**32 for s in seeds)


def test_the_base_seed_and_the_temperature_are_part_of_the_request() -> None:
    base = LocalChatModel()._call_seed(ASK, 0.8)
    assert LocalChatModel()._call_seed(ASK, 0.4) != base
    assert LocalChatModel(seed=7)._call_seed(ASK, 0.8) != base
    # The replay cache keeps replies of another base seed apart; the default keeps old keys.
    assert "seed" not in LocalChatModel()._identifying_params
    assert LocalChatModel(seed=7)._identifying_params["seed"] == 7
