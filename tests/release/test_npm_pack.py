"""The TypeScript client's npm tarball holds its JavaScript and types, and a project can use it.

``npm ci`` and ``npm run build`` in ``clients/typescript``, then ``npm pack``;
the tarball must hold, for every module of ``src/``, its JavaScript and its
``.d.ts``, plus the JSON schema, the README and the license, and nothing of
``src/`` or ``test/``. Then a new project installs the tarball (offline: the
package has no runtime dependency), imports it with node, and type-checks a
consumer with the package's own TypeScript compiler, which resolves the types
through ``package.json``'s ``exports`` as a user's build would.

Slow; skipped with the reason when node or npm is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "clients" / "typescript"


def test_the_package_carries_the_project_license() -> None:
    assert (PACKAGE / "LICENSE").read_text() == (REPO / "LICENSE").read_text()
    assert json.loads((PACKAGE / "package.json").read_text())["license"] == "MIT"


def run(command: list[str], cwd: Path) -> str:
    result = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``npm pack`` of the freshly built package."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to build and pack the TypeScript client")
    out = tmp_path_factory.mktemp("npm")
    run(["npm", "ci", "--no-audit", "--no-fund"], PACKAGE)
    run(["npm", "run", "build"], PACKAGE)
    packed = json.loads(run(["npm", "pack", "--json", "--pack-destination", str(out)], PACKAGE))
    return out / packed[0]["filename"]


@pytest.mark.slow
def test_the_tarball_holds_the_built_javascript_and_types(tarball: Path) -> None:
    with tarfile.open(tarball) as archive:
        names = {name.removeprefix("package/") for name in archive.getnames()}
        manifest = json.load(archive.extractfile("package/package.json"))  # type: ignore[arg-type]
        license_text = archive.extractfile("package/LICENSE").read().decode()  # type: ignore[union-attr]
    for module in sorted(PACKAGE.glob("src/*.ts")):
        for built in (f"dist/{module.stem}.js", f"dist/{module.stem}.d.ts"):
            assert built in names, f"{built} is missing from {tarball.name}"
    for needed in ("package.json", "README.md", "LICENSE", "schema/message.schema.json"):
        assert needed in names
    assert license_text == (REPO / "LICENSE").read_text()
    assert not [name for name in names if name.startswith(("src/", "test/", "node_modules/"))]
    entry = manifest["exports"]["."]
    for target in (manifest["main"], manifest["types"], entry["import"], entry["types"]):
        assert target.removeprefix("./") in names, f"package.json points at {target}, not packed"


CONSUMER = """\
import { Client, ClientError, messagesIn } from "@tenxgraph/client";
import type { ContentBlock, Message, StreamPart } from "@tenxgraph/client";

const client: Client = new Client("http://127.0.0.1:8123", { apiKey: "key" });
const message: Message = { role: "user", content: [{ type: "text", text: "hi" }] };
const blocks: ContentBlock[] = message.content;
function kind(part: StreamPart): string {
  return part.kind;
}
export { blocks, client, kind, messagesIn };
export const isError = (error: unknown): boolean => error instanceof ClientError;
"""

TSCONFIG = {
    "compilerOptions": {
        "target": "ES2022",
        "module": "NodeNext",
        "moduleResolution": "NodeNext",
        "lib": ["ES2022", "DOM", "DOM.Iterable"],
        "types": [],
        "strict": True,
        "noEmit": True,
    },
    "files": ["consumer.ts"],
}


@pytest.mark.slow
def test_a_project_installs_the_tarball_imports_it_and_type_checks_against_it(
    tarball: Path, tmp_path: Path
) -> None:
    project = tmp_path / "consumer"
    project.mkdir()
    manifest = {"name": "consumer", "private": True, "type": "module"}
    (project / "package.json").write_text(json.dumps(manifest))
    run(["npm", "install", "--offline", "--no-audit", "--no-fund", str(tarball)], project)
    script = (
        'import { Client } from "@tenxgraph/client";'
        'const client = new Client("http://127.0.0.1:1/");'
        "console.log(typeof Client, client.url);"
    )
    printed = run(["node", "--input-type=module", "-e", script], project)
    assert printed.split() == ["function", "http://127.0.0.1:1"]
    (project / "consumer.ts").write_text(CONSUMER)
    (project / "tsconfig.json").write_text(json.dumps(TSCONFIG))
    run([str(PACKAGE / "node_modules" / ".bin" / "tsc"), "-p", "tsconfig.json"], project)
