"""The execution environment: ``ansible-builder create`` on execution-environment.yml gives a build context.

The context is made in a temporary directory from the definition, the requirement files beside it and a
collection tarball built here, as ``make ee-context`` does with the tarball of ``make build``. Only the
context is checked; building the image needs podman or docker (docs/awx.md).
"""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from importlib.metadata import requires

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EE_FILES = ("execution-environment.yml", "requirements.txt", "bindep.txt")


def _load_yaml(name):
    with open(os.path.join(REPO, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


GALAXY = _load_yaml("galaxy.yml")
EE = _load_yaml("execution-environment.yml")
TARBALL = "%s-%s-%s.tar.gz" % (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])


def _run(argv, cwd):
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, "%s: rc %d\n%s%s" % (" ".join(argv), proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """The build context of ansible-builder create: (its directory, the text of its Containerfile)."""
    top = tmp_path_factory.mktemp("ee")
    src = top / "src"
    os.makedirs(src / "build")
    for name in EE_FILES:
        shutil.copy(os.path.join(REPO, name), src / name)
    bindir = os.path.dirname(sys.executable)
    _run([os.path.join(bindir, "ansible-galaxy"), "collection", "build", "--output-path", str(src / "build"), REPO], cwd=str(top))
    out = top / "context"
    _run([sys.executable, "-m", "ansible_builder", "create", "--file", "execution-environment.yml", "--context", str(out),
          "--output-filename", "Containerfile"], cwd=str(src))
    return out, _read(out / "Containerfile")


def _build_arg(containerfile, name):
    match = re.search(r'^ARG %s="([^"]*)"$' % name, containerfile, re.M)
    assert match, "no ARG %s in the Containerfile" % name
    return match.group(1)


def _pin(line_prefix):
    """The version pinned by the requirements-dev.txt line that starts with line_prefix."""
    for line in _read(os.path.join(REPO, "requirements-dev.txt")).splitlines():
        if line.startswith(line_prefix):
            return line.split("==", 1)[1].split(";", 1)[0].strip()
    raise AssertionError("requirements-dev.txt has no line %r" % line_prefix)


def test_the_definition_is_schema_3_on_the_base_image_the_containerfile_starts_from(context):
    containerfile = context[1]
    assert EE["version"] == 3
    assert _build_arg(containerfile, "EE_BASE_IMAGE") == EE["images"]["base_image"]["name"]
    assert "FROM $EE_BASE_IMAGE AS base" in containerfile
    python = EE["dependencies"]["python_interpreter"]
    assert _build_arg(containerfile, "PYCMD") == python["python_path"]
    # ansible-core 2.21 runs on Python >= 3.12 on the controller
    assert re.fullmatch(r"/usr/bin/python3\.(1[2-9])", python["python_path"])


def test_ansible_core_and_runner_are_the_tested_pins_within_the_supported_range(context):
    containerfile = context[1]
    refs = dict(ref.split("==", 1) for ref in _build_arg(containerfile, "ANSIBLE_INSTALL_REFS").split())
    assert refs == {"ansible-core": _pin("ansible-core=="), "ansible-runner": _pin("ansible-runner==")}
    runtime = _load_yaml(os.path.join("meta", "runtime.yml"))
    assert refs["ansible-core"] in SpecifierSet(runtime["requires_ansible"])
    assert "RUN $PYCMD -m pip install --no-cache-dir $ANSIBLE_INSTALL_REFS" in containerfile


def test_the_python_and_system_requirements_are_copied_and_introspected(context):
    out, containerfile = context
    assert _read(out / "_build" / "requirements.txt") == _read(os.path.join(REPO, "requirements.txt"))
    assert _read(out / "_build" / "bindep.txt") == _read(os.path.join(REPO, "bindep.txt"))
    assert "COPY _build/requirements.txt requirements.txt" in containerfile
    assert "COPY _build/bindep.txt bindep.txt" in containerfile
    assert "--user-pip=requirements.txt --user-bindep=bindep.txt" in containerfile
    assert "RUN /output/scripts/install-from-bindep" in containerfile


def test_requirements_txt_covers_what_the_controller_side_plugins_import():
    named = {canonicalize_name(Requirement(line).name) for line in _read(os.path.join(REPO, "requirements.txt")).splitlines()
             if line.strip() and not line.lstrip().startswith("#")}
    with_core = {canonicalize_name(Requirement(req).name) for req in requires("ansible-core") or ()}
    imported = {}
    for kind in ("filter", "action", "module_utils", "plugin_utils"):
        for top, _dirs, files in os.walk(os.path.join(REPO, "plugins", kind)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(top, name)
                for node in ast.walk(ast.parse(_read(path), path)):
                    if isinstance(node, ast.Import):
                        modules = [alias.name for alias in node.names]
                    elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                        modules = [node.module]
                    else:
                        continue
                    for module in modules:
                        root = module.split(".")[0]
                        if root not in sys.stdlib_module_names and root not in ("ansible", "ansible_collections", "__future__"):
                            imported.setdefault(canonicalize_name(root), path)
    assert "netaddr" in imported  # the RoCE address filters
    missing = {name: path for name, path in imported.items() if name not in named | with_core}
    assert not missing, "imported on the controller but not in requirements.txt: %s" % missing


def test_bindep_gives_the_ssh_client_on_the_image_platform():
    from bindep.depends import Depends

    depends = Depends(_read(os.path.join(REPO, "bindep.txt")))
    assert [rule[0] for rule in depends.active_rules(["platform:rpm", "platform:redhat"])] == ["openssh-clients"]
    assert [rule[0] for rule in depends.active_rules(["platform:dpkg", "platform:debian"])] == ["openssh-client"]


def test_the_collection_tarball_is_in_the_context_and_installed_in_the_final_stage(context):
    out, containerfile = context
    tarball = out / "_build" / "collections" / TARBALL
    assert os.listdir(out / "_build" / "collections") == [TARBALL]
    with tarfile.open(tarball) as archive:
        manifest = json.load(archive.extractfile("MANIFEST.json"))["collection_info"]
        names = archive.getnames()
    assert (manifest["namespace"], manifest["name"], manifest["version"]) == (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])
    # a consumer's own execution environment reads these two from the installed collection
    assert "requirements.txt" in names and "bindep.txt" in names
    assert not [name for name in names if name.split("/")[0].startswith(".venv")]

    final = containerfile.split("FROM base AS final", 1)[1]
    lines = final.splitlines()
    copy = lines.index("COPY _build/collections/ /tmp/npuops-collections/")
    install = next(i for i, line in enumerate(lines) if line.startswith("RUN ansible-galaxy collection install --offline"))
    assert "--collections-path /usr/share/ansible/collections /tmp/npuops-collections/npuops-ascend-*.tar.gz" in lines[install]
    assert "ansible-doc npuops.ascend.npu_info" in lines[install]
    # after the Python requirements are installed, as root (before the final USER line)
    assert lines.index("RUN /output/scripts/install-from-bindep && rm -rf /output/wheels") < copy < install
    assert install < next(i for i, line in enumerate(lines) if line.startswith("USER "))


def test_no_galaxy_stage_while_the_collection_depends_on_no_other_collection(context):
    containerfile = context[1]
    dependencies = GALAXY.get("dependencies") or {}
    if dependencies:
        assert EE["dependencies"].get("galaxy"), "galaxy.yml depends on %s: execution-environment.yml needs galaxy requirements" % sorted(dependencies)
        assert "FROM base AS galaxy" in containerfile
    else:
        assert "galaxy" not in EE["dependencies"]
        assert "FROM base AS galaxy" not in containerfile
