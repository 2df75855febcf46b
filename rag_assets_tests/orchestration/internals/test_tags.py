"""The assumption about Dagster's partition-range run tags."""

import dagster as dg

from rag_assets.orchestration.internals import tags as internals
from rag_assets_tests.support.dagster_assumptions import assumption


def test_partition_range_tags_are_dagsters_range_run_tags(tmp_path):
    with assumption("tags.partition_range_tags"):
        start, end = internals.partition_range_tags()
        assert (start, end) == ("dagster/asset_partition_range_start", "dagster/asset_partition_range_end")
        keys = dg.StaticPartitionsDefinition(["a", "b", "c"])

        @dg.asset(partitions_def=keys)
        def part(context: dg.AssetExecutionContext) -> None:
            assert context.partition_key_range == dg.PartitionKeyRange("a", "b")

        job = dg.Definitions(assets=[part]).get_implicit_global_asset_job_def()
        with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
            assert job.execute_in_process(instance=instance, tags={start: "a", end: "b"}).success
