"""An import-linter contract type for pyproject.toml's [tool.importlinter]: the private modules of an
external package (its ``_*`` submodules, e.g. ``dagster._core``) may be imported only by the listed
modules and their descendants.

import-linter's own ``forbidden`` contract names external packages only by their top level
(``dagster``), so this reads the import statements themselves, as import-linter recorded them.
"""

from __future__ import annotations

import re

from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class PrivateSubmodulesContract(Contract):
    """Fields: ``package`` (an external package; needs include_external_packages = true) and
    ``allowed_importers`` (the modules that may import its private submodules)."""

    type_name = "private_submodules"

    package = fields.StringField()
    allowed_importers = fields.ListField(subfield=fields.StringField())

    def check(self, graph, verbose: bool) -> ContractCheck:
        package = str(self.package)
        allowed = [str(m) for m in self.allowed_importers]
        private = re.compile(rf"(?:^|[\s,(])(?:from|import)\s+{re.escape(package)}\._|\b{re.escape(package)}\._\w")
        offenders = []
        for importer in sorted(graph.find_modules_that_directly_import(package)):
            if any(importer == a or importer.startswith(f"{a}.") for a in allowed):
                continue
            for detail in graph.get_import_details(importer=importer, imported=package):
                if private.search(detail["line_contents"]):
                    offenders.append((importer, detail["line_number"], detail["line_contents"]))
        return ContractCheck(kept=not offenders, metadata={"offenders": offenders})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, line, contents in check.metadata["offenders"]:
            output.print_error(f"{importer} (l.{line}) imports a private module of {self.package}: {contents}")
            output.new_line()
        output.print_error(f"Put the import in {', '.join(str(m) for m in self.allowed_importers)}, behind a "
                           "named function with a test of its own.", bold=False)
