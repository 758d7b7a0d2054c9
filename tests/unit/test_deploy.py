"""The deployment files under deploy/, checked as far as this machine allows (docs/operating.md).

- ``deploy/systemd/mcpx@.service``: ``systemd-analyze verify`` of the template and of an instance,
  with no warning at all (an unknown key is only a warning there); its ports follow the instance.
- HAProxy: ``haproxy -c`` of ``deploy/systemd/haproxy.cfg`` (which is ``deploy/haproxy.cfg`` as
  ``scripts/replicas.py`` renders it for instances 01-03) and of the Kubernetes ConfigMap's.
- ``deploy/kubernetes/mcpx.yaml``: every resource against the Kubernetes 1.37 schemas, strict
  (PyPI ``kubernetes-validate``, which ships them: offline); the balancer hashes on Mcp-Session-Id.
- ``deploy/Containerfile``: its instructions parsed and checked (proxy-only install with the lock,
  a non-root user, ``mitmdump -s "$(python -m mcpx)"``, the files it copies exist); built only
  where a container engine and its base image are at hand (no registry here).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

import peers_lib as pl
from proxy_lib import ROOT
from replicas_lib import haproxy_missing

sys.path.insert(0, str(ROOT / "scripts"))
import replicas  # noqa: E402

DEPLOY = ROOT / "deploy"


def _haproxy_check(path) -> None:
    pl.require(["haproxy (Debian package)"] if haproxy_missing() else [], "run scripts/setup_haproxy.sh")
    cp = subprocess.run([replicas.haproxy_bin(), "-c", "-f", str(path)], capture_output=True, text=True)
    assert cp.returncode == 0 and "Configuration file is valid" in cp.stdout, cp.stdout + cp.stderr
    assert "WARNING" not in cp.stdout + cp.stderr, cp.stdout + cp.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed (Debian's systemd)")
def test_systemd_template_unit_verifies(tmp_path):
    unit = DEPLOY / "systemd" / "mcpx@.service"
    shutil.copy(unit, tmp_path / unit.name)
    (tmp_path / "mcpx@01.service").symlink_to(tmp_path / unit.name)
    for name in (unit.name, "mcpx@01.service"):
        cp = subprocess.run(["systemd-analyze", "verify", str(tmp_path / name)], capture_output=True, text=True,
                            env={**os.environ, "SYSTEMD_LOG_LEVEL": "notice"})
        assert (cp.returncode, cp.stdout, cp.stderr) == (0, "", ""), name
    text = unit.read_text()
    assert "-p 81%i" in text and "mcpx_metrics=127.0.0.1:91%i" in text and "TimeoutStopSec=40" in text
    assert 'mitmdump -q -s "$(/opt/mcpx/bin/python -m mcpx)"' in text


def test_systemd_haproxy_config_is_the_rendered_template():
    cfg = DEPLOY / "systemd" / "haproxy.cfg"
    assert cfg.read_text() == replicas.render("0.0.0.0:8080", [("127.0.0.1", 8100 + i, 9100 + i) for i in (1, 2, 3)], "hash")
    _haproxy_check(cfg)


def test_kubernetes_manifests_validate_offline(tmp_path):
    import kubernetes_validate
    path = DEPLOY / "kubernetes" / "mcpx.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    assert [d["kind"] for d in docs] == ["Secret", "Deployment", "Service", "ConfigMap", "Deployment", "Service"]
    for d in docs:
        kubernetes_validate.validate(d, "1.37.0", strict=True)  # raises ValidationError
    mcpx = docs[1]["spec"]["template"]["spec"]
    container = mcpx["containers"][0]
    assert mcpx["securityContext"]["runAsNonRoot"] is True
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert "mcpx_session_keys=/etc/mcpx/mcpx-session.key" in container["args"]
    assert mcpx["terminationGracePeriodSeconds"] > 30  # mcpx_drain_grace and a margin
    assert docs[2]["spec"]["clusterIP"] == "None"  # headless: HAProxy finds each replica in DNS
    cfg = docs[3]["data"]["haproxy.cfg"]
    assert "balance hdr(Mcp-Session-Id)" in cfg and "hash-type consistent" in cfg and "GET /healthz" in cfg
    (tmp_path / "haproxy.cfg").write_text(cfg)
    _haproxy_check(tmp_path / "haproxy.cfg")


def _instructions(text: str) -> list[tuple[str, str]]:
    """A Containerfile's instructions (continuation lines joined, comments dropped)."""
    out, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            word, _, rest = pending.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            pending = ""
    return out


def test_containerfile_is_the_proxy_only_install_as_non_root():
    ins = _instructions((DEPLOY / "Containerfile").read_text())
    known = {"FROM", "ENV", "WORKDIR", "COPY", "RUN", "USER", "EXPOSE", "STOPSIGNAL", "ENTRYPOINT", "CMD"}
    assert ins[0][0] == "FROM" and {w for w, _ in ins} <= known
    for word, rest in ins:
        if word == "COPY":
            for src in rest.split()[:-1]:
                assert (ROOT / src).exists(), src
    runs = [r for w, r in ins if w == "RUN"]
    assert any("pip install -c requirements.lock ." in r for r in runs)
    users = [r for w, r in ins if w == "USER"]
    assert users and users[-1] not in ("root", "0")
    words = [w for w, _ in ins]
    assert words.index("USER") < words.index("ENTRYPOINT")
    entry = json.loads(next(r for w, r in ins if w == "ENTRYPOINT"))
    assert entry[:2] == ["/bin/sh", "-c"] and entry[2].startswith('exec mitmdump -s "$(python -m mcpx)" "$@"')
    json.loads(next(r for w, r in ins if w == "CMD"))


def test_containerfile_builds_where_an_engine_and_its_base_image_are_at_hand(tmp_path):
    base = next(r for w, r in _instructions((DEPLOY / "Containerfile").read_text()) if w == "FROM")
    engine = next((e for e in ("podman", "docker") if shutil.which(e)), None)
    if engine is None:
        pytest.skip("no container engine (docker, podman)")
    if subprocess.run([engine, "image", "inspect", base], capture_output=True).returncode != 0:
        pytest.skip(f"{engine}: base image {base} not at hand (no daemon, or no registry to pull it from)")
    cp = subprocess.run([engine, "build", "-f", str(DEPLOY / "Containerfile"), "-t", "mcpx-test:latest", str(ROOT)],
                        capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    run = subprocess.run([engine, "run", "--rm", "--entrypoint", "id", "mcpx-test:latest", "-u"], capture_output=True, text=True)
    assert run.stdout.strip() == "10001"
