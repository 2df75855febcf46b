from rag_assets.orchestration.partition_ranges import balanced_runs, plan_runs

ORDER = [f"k{i:02d}" for i in range(30)]


def test_small_gaps_are_bridged_large_ones_split():
    runs = plan_runs(ORDER, ["k01", "k03", "k20"], max_per_run=100)
    assert [(r.first, r.last, r.keys) for r in runs] == [("k01", "k03", ("k01", "k03")), ("k20", "k20", ("k20",))]


def test_no_run_holds_more_than_max_per_run_wanted_keys():
    runs = plan_runs(ORDER, ORDER, max_per_run=8)
    assert [len(r.keys) for r in runs] == [8, 8, 8, 6]
    assert [k for r in runs for k in r.keys] == ORDER and runs[1].first == "k08"


def test_unknown_keys_are_ignored_and_tags_are_dagster_range_tags():
    (run,) = plan_runs(ORDER, ["k05", "nope"], max_per_run=10)
    assert run.tags == {"dagster/asset_partition_range_start": "k05", "dagster/asset_partition_range_end": "k05"}


def test_balanced_runs_split_the_work_evenly_for_runs_side_by_side():
    weights = {k: (30.0 if k == "k00" else 1.0) for k in ORDER}
    runs = balanced_runs(ORDER, weights, workers=4, max_per_run=100)
    # the big document alone sets the pace: the rest fits in one run beside it (no extra start-ups)
    assert [r.keys[0] for r in runs] == ["k00", "k01"] and [k for r in runs for k in r.keys] == ORDER
    even = balanced_runs(ORDER, {k: 1.0 for k in ORDER}, workers=3, max_per_run=100)
    assert [len(r.keys) for r in even] == [10, 10, 10]
