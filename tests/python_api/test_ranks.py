"""Ranks as a torchrun job sees them: rank/world_size arguments or the launcher's variables
(RANK/WORLD_SIZE), disjoint shares that cover the dataset, and a state_dict taken with one world
size resumed with another (the remaining global order is re-split)."""
import math


def ids(loader):
    return [i for b in loader for i in b["sample_ids"].tolist()]


def test_two_ranks_split_the_epoch(stoker, dataset):
    r0 = ids(stoker.Loader(dataset, batch_size=4, threads=1, rank=0, world_size=2))
    r1 = ids(stoker.Loader(dataset, batch_size=4, threads=1, rank=1, world_size=2))
    assert not set(r0) & set(r1)
    assert sorted(r0 + r1) == list(range(40))


def test_rank_from_torchrun_variables(stoker, dataset, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    loader = stoker.Loader(dataset, batch_size=4, threads=1)
    assert loader.rank_info() == {"rank": 1, "world_size": 2}
    assert ids(loader) == ids(stoker.Loader(dataset, batch_size=4, threads=1, rank=1,
                                            world_size=2))


def test_resume_with_another_world_size(stoker, dataset):
    one = stoker.Loader(dataset, batch_size=4, threads=1)
    it = iter(one)
    seen = [i for _ in range(3) for i in next(it)["sample_ids"].tolist()]
    sd = one.state_dict()
    one.close()
    rest = []
    for r in range(2):
        l = stoker.Loader(dataset, batch_size=4, threads=1, rank=r, world_size=2)
        l.load_state_dict(sd)
        rest += ids(l)
    assert not set(seen) & set(rest)
    assert sorted(seen + rest) == list(range(40))
    assert math.isclose(len(rest), 40 - len(seen))
