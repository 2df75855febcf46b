"""What the ingestion assets share: the run's documents as they are now, progress to listeners and the
run log, and the MaterializeResult / check results that tell a stage's story."""

import time

import dagster as dg

from rag_assets.config import Settings
from rag_assets.index import invariants
from rag_assets.index.stage_store import StageStore
from rag_assets.ingest.discovery import DocumentTooLarge, fingerprint_file, partition_key_for
from rag_assets.ingest.stages import StageReport
from rag_assets.models import DocumentRef
from rag_assets.progress import ProgressEvent, Reporter, Throttle, describe, publish

# Up to this many documents a run gives each partition its own metadata. Dagster's
# add_asset_metadata(partition_key=...) re-reads the run's partition range on every call
# (quadratic in the run's size: +11 ms a document at 1,000, benchmarks/ingest_overhead.md).
_PER_PARTITION_METADATA_MAX = 25
_PROGRESS_LOG_SECONDS = 5.0


def document_refs(context: dg.AssetExecutionContext, settings: Settings, stages: StageStore) -> list[DocumentRef]:
    """This run's documents as they are now. The catalog's fingerprint is reused for a file whose
    size, mtime and inode have not moved (no re-read); any other file is hashed again, so a run
    acts on the file as it is, not as the catalog last saw it. A vanished file is skipped (the next
    catalog run removes it); a key the catalog has not seen yet (added by the sensor) is its path."""
    known = stages.catalog_by_partition_key(context.partition_keys)
    refs = []
    for key in context.partition_keys:
        last = known.get(key)
        doc_path = last.doc_path if last else key
        try:
            refs.append(fingerprint_file(settings.docs_dir, doc_path, max_file_bytes=settings.max_file_bytes, known=last))
        except FileNotFoundError:
            context.log.warning(f"{doc_path}: vanished; the next document_catalog run removes it from the index")
        except (OSError, DocumentTooLarge) as exc:
            context.log.error(f"{doc_path}: {exc}")
    return refs


def progress_reporter(context: dg.AssetExecutionContext) -> Reporter:
    """Progress to in-process listeners (the CLI's bar) and, every few seconds, to the run log."""
    throttle, started = Throttle(_PROGRESS_LOG_SECONDS), time.monotonic()

    def report(event: ProgressEvent) -> None:
        publish(event)
        if event.total and throttle.due(event):
            context.log.info(describe(event, started))

    return report


def stage_result(
    context: dg.AssetExecutionContext, report: StageReport, check_results=(), **extra
) -> dg.MaterializeResult:
    """Metadata that tells a stage's story: counts, timings, and what failed and why."""
    for reason in report.failed.values():
        context.log.error(f"{report.stage}: {reason}")
    metadata: dict = {
        "documents_processed": len(report.processed),
        "documents_unchanged": len(report.unchanged),
        "documents_failed": len(report.failed),
        "documents_skipped": len(report.skipped),
        "seconds": round(report.seconds, 3),
        **report.stats,
        **extra,
    }
    keys = context.partition_keys
    # Dagster copies a run's MaterializeResult metadata into every partition's event (two rows each,
    # run and index database): a large range run puts its summary on its last partition only (its
    # log names every failure); a small one also gets per-document details
    small = len(keys) <= _PER_PARTITION_METADATA_MAX
    if report.failed:
        metadata["errors"] = dg.MetadataValue.json(report.errors[: 200 if small else 20])
    if not small:
        context.add_asset_metadata(metadata, partition_key=keys[-1])
        context.log.info(f"{report.stage} over {len(keys)} documents: " + ", ".join(
            f"{k}={v}" for k, v in metadata.items() if isinstance(v, (int, float, str))))
        return dg.MaterializeResult(check_results=list(check_results))
    if len(keys) == 1 and report.per_document:
        metadata.update(next(iter(report.per_document.values())))
    elif report.per_document and small:
        rows = list(report.per_document.items())
        columns = sorted({k for _, d in rows for k in d})
        table = "| document | " + " | ".join(columns) + " |\n|---|" + "---|" * len(columns) + "\n"
        table += "\n".join(f"| `{p}` | " + " | ".join(str(d.get(c, "")) for c in columns) + " |" for p, d in rows)
        metadata["per_document"] = dg.MetadataValue.md(table)
        by_path = {partition_key_for(p): d for p, d in report.per_document.items()}
        for key in keys:
            if key in by_path:
                context.add_asset_metadata({f"document.{k}": v for k, v in by_path[key].items()}, partition_key=key)
    return dg.MaterializeResult(metadata=metadata, check_results=list(check_results))


def check_result(name: str, finding: invariants.Finding) -> dg.AssetCheckResult:
    metadata: dict = dict(finding.counts)
    if finding.problems:
        metadata["problems"] = dg.MetadataValue.md("\n".join(f"- {p}" for p in finding.problems[:100]))
    return dg.AssetCheckResult(check_name=name, passed=finding.passed, severity=dg.AssetCheckSeverity.ERROR, metadata=metadata)


def check_specs(asset: dg.AssetKey, described: dict[str, str]) -> list[dg.AssetCheckSpec]:
    return [dg.AssetCheckSpec(name, asset=asset, description=text) for name, text in described.items()]
