"""The batching event-log storage records exactly what Dagster's stock SQLite storage records."""

import dagster as dg
import pytest

from rag_assets.orchestration import event_log
from rag_assets.orchestration.partition_ranges import range_tags
from rag_assets_tests.conftest import batching_sqlite_storage, instance_yaml

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning")

parts = dg.DynamicPartitionsDefinition(name="pages")
_P = dict(partitions_def=parts, backfill_policy=dg.BackfillPolicy.multi_run(max_partitions_per_run=100))


@dg.asset(**_P)
def first(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"pages": len(context.partition_keys)})


@dg.asset(deps=[first], check_specs=[dg.AssetCheckSpec("complete", asset="second")], **_P)
def second(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"pages": len(context.partition_keys)},
                                check_results=[dg.AssetCheckResult(check_name="complete", passed=True)])


def _run(home, storage_yaml: str, monkeypatch) -> dict:
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(home, storage_yaml))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as instance:
        keys = [f"p{i:03d}" for i in range(40)]
        instance.add_dynamic_partitions("pages", keys)
        job = dg.Definitions(assets=[first, second]).resolve_implicit_global_asset_job_def()
        assert job.execute_in_process(instance=instance, tags=range_tags(keys[0], keys[29])).success
        assert job.execute_in_process(instance=instance, partition_key="p035").success
        out = {}
        for key in (first.key, second.key):
            events = instance.fetch_materializations(key, limit=1000).records
            out[key.to_user_string()] = {
                "materialized": sorted(instance.get_materialized_partitions(key)),
                "events": sorted((e.partition_key, e.asset_materialization.metadata["pages"].value) for e in events),
                "planned": len(instance.get_event_records(dg.EventRecordsFilter(
                    dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED, asset_key=key))),
                "latest_run": instance.get_latest_materialization_event(key).run_id is not None,
            }
        out["checks"] = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(second.key, "complete"), limit=10).__len__()
        return out


def test_batched_writes_record_what_the_stock_storage_records(tmp_path, monkeypatch):
    batches = []
    original = event_log.BatchingSqliteEventLogStorage.store_event_batch

    def counting(self, events):
        batches.append(len(events))
        return original(self, events)

    monkeypatch.setattr(event_log.BatchingSqliteEventLogStorage, "store_event_batch", counting)
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "1000")
    stock = _run(tmp_path / "stock", f"  sqlite:\n    base_dir: {tmp_path}/stock/storage", monkeypatch)
    batched = _run(tmp_path / "batched", batching_sqlite_storage(tmp_path / "batched"), monkeypatch)
    assert batched == stock
    assert stock["first"]["materialized"] == [f"p{i:03d}" for i in range(30)] + ["p035"]
    assert max(batches) >= 30, f"the range run's events were not batched: {batches}"
