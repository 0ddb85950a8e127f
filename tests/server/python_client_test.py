"""A Python gRPC client of tessera.v1, as a user would write one: stubs generated from
proto/tessera.proto with grpcio-tools, a real `tessera serve` and `tessera worker` on loopback.
It submits a small job, watches it to its end, exports its records (whole and paged), imports
them into a second server and checks that they come back the same, and checks the API's
names: JobState and JobEvent.Kind share no value name (`ev.kind == JOB_CANCELLED` cannot be
written for an event), and export lines name their fields as Record does.

usage: python_client_test.py TESSERA_BINARY REPO_ROOT
Exits 77 (CTest's skip) without grpcio and grpcio-tools, after trying $TESSERA_TEST_VENV's
Python (scripts/setup.sh installs them there for the tests).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from test_venv import run_in_test_venv_or_skip  # noqa: E402

try:
    import grpc
    from grpc_tools import protoc
except ImportError:
    run_in_test_venv_or_skip("grpcio and grpcio-tools are not installed; bash scripts/setup.sh "
                             "(or build/test-venv/bin/pip install grpcio grpcio-tools) makes "
                             "this test run")

TESSERA, REPO = sys.argv[1:3]
WORKLOAD = "GMM:M=64,N=64,K=64"
TRIALS = 8


def generate_stubs(out_dir):
    """tessera_pb2 and tessera_pb2_grpc from the repository's proto, importable as proto.*"""
    code = protoc.main(["grpc_tools.protoc", "-I", REPO, "--python_out", out_dir,
                        "--grpc_python_out", out_dir,
                        os.path.join(REPO, "proto", "tessera.proto")])
    assert code == 0, f"protoc failed: {code}"
    sys.path.insert(0, out_dir)


class Processes:
    """The processes this test starts; all are killed when it ends, however it ends."""

    def __init__(self, scratch):
        self.scratch = scratch
        self.children = []

    def start(self, name, args):
        err = open(os.path.join(self.scratch, name + ".err"), "w")
        out = subprocess.PIPE if name.startswith("serve") else subprocess.DEVNULL
        child = subprocess.Popen([TESSERA] + args, stdout=out, stderr=err, text=True)
        self.children.append((name, child))
        return child

    def serve(self, name):
        child = self.start(name, ["serve", "--db", os.path.join(self.scratch, name + ".db"),
                                  "--listen", "127.0.0.1:0", "--quiet"])
        line = child.stdout.readline()
        assert line.startswith("listening on "), f"{name}: {line!r}\n{self.log(name)}"
        return line.split()[-1]

    def log(self, name):
        with open(os.path.join(self.scratch, name + ".err")) as f:
            return f.read()

    def wait_for_log(self, name, text, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if text in self.log(name):
                return
            time.sleep(0.1)
        raise AssertionError(f"{name} never logged {text!r}:\n{self.log(name)}")

    def stop(self):
        for _, child in self.children:
            child.kill()
            child.wait()


def check_enum_names(pb):
    states = set(pb.JobState.keys())
    kinds = set(pb.JobEvent.Kind.keys())
    assert not states & kinds, f"JobState and JobEvent.Kind share {states & kinds}"
    assert all(k.startswith("EVENT_") for k in kinds), kinds
    assert all(s.startswith("JOB_") for s in states), states
    # The numbers overlap (JOB_CANCELLED and EVENT_JOB_FINISHED are both 5); the names do not,
    # so a JobState name is not a JobEvent attribute and an event kind is not a module constant.
    assert pb.JOB_CANCELLED == 5 and pb.JobEvent.EVENT_JOB_FINISHED == 5
    assert pb.JobEvent.EVENT_JOB_CANCELLED == 7
    assert not hasattr(pb.JobEvent, "JOB_CANCELLED")
    assert not hasattr(pb, "EVENT_JOB_CANCELLED")
    try:
        pb.JobEvent.Kind.Value("JOB_CANCELLED")
    except ValueError:
        pass
    else:
        raise AssertionError("JOB_CANCELLED is a JobEvent.Kind name")


def export(stub, pb, page_size=0):
    """Every record line, following next_page_token when paging."""
    lines, token = [], ""
    while True:
        page = list(stub.ExportRecords(pb.ExportRecordsRequest(page_size=page_size,
                                                               page_token=token), timeout=60))
        lines += [line.json for line in page]
        token = page[-1].next_page_token if page else ""
        assert all(not line.next_page_token for line in page[:-1])
        if not token:
            return lines
        assert page_size > 0 and len(page) == page_size, (page_size, len(page))


def check_record_line(pb, line):
    fields = {f.name for f in pb.Record.DESCRIPTOR.fields}
    # retimes_record_id is optional and set only on a runoff's re-measurement.
    missing = fields - set(line) - {"retimes_record_id"}
    assert not missing, f"an export line lacks Record's fields {missing}: {sorted(line)}"
    old = {"trace", "run_secs", "error", "stage_secs", "workload"} & set(line)
    assert not old, f"an export line has pre-0.x names {old}"
    assert isinstance(line["trace_json"], str) and isinstance(line["id"], int)
    assert set(line["stage_seconds"]) == {f.name for f in pb.StageSeconds.DESCRIPTOR.fields}


def main():
    scratch = tempfile.mkdtemp(prefix="python_client_test_")
    generate_stubs(scratch)
    from proto import tessera_pb2 as pb
    from proto import tessera_pb2_grpc as pb_grpc
    check_enum_names(pb)

    processes = Processes(scratch)
    try:
        address = processes.serve("serve")
        processes.start("worker", ["worker", "--server", address, "--target", "cpu",
                                   "--max-backoff", "1", "--pull-wait", "2"])
        processes.wait_for_log("worker", "registered with", 60)
        stub = pb_grpc.TuningServiceStub(grpc.insecure_channel(address))
        assert stub.GetVersion(pb.Empty(), timeout=30).api == "tessera.v1"

        job = stub.SubmitJob(pb.SubmitJobRequest(workloads=[WORKLOAD], target="cpu",
                                                 max_trials=TRIALS, trials_per_iter=TRIALS,
                                                 runoff=False), timeout=60).job_id
        events = list(stub.WatchJob(pb.JobRef(job_id=job), timeout=300))
        kinds = [pb.JobEvent.Kind.Name(e.kind) for e in events]
        assert kinds[0] == "EVENT_SNAPSHOT", kinds
        assert kinds[-1] == "EVENT_JOB_FINISHED", kinds
        final = events[-1].status
        assert pb.JobState.Name(final.state) == "JOB_SUCCEEDED", final
        assert final.trials == TRIALS, final
        assert final.tasks[0].has_best, final
        status = stub.GetJob(pb.JobRef(job_id=job), timeout=30)
        assert status.state == pb.JOB_SUCCEEDED and status.state != pb.JOB_CANCELLED

        lines = export(stub, pb)
        assert len(lines) == TRIALS, len(lines)
        parsed = [json.loads(line) for line in lines]
        for line in parsed:
            check_record_line(pb, line)
        assert export(stub, pb, page_size=3) == lines, "paged export differs"
        best = stub.GetBest(pb.GetBestRequest(workload=WORKLOAD, target=final.target),
                            timeout=30)
        assert best.found and best.record.id == final.tasks[0].best_record_id, best
        by_id = {line["id"]: line for line in parsed}
        # The exported line of the best record names its fields as the Record message does.
        record = best.record
        line = by_id[record.id]
        for name in ("workload_hash", "target", "trace_json", "error_kind", "error_msg",
                     "verified", "job_id"):
            assert line[name] == getattr(record, name), (name, line[name], getattr(record, name))
        assert line["run_seconds"] == list(record.run_seconds)
        assert line["provenance"]["worker_id"] == record.provenance.worker_id

        # Into a fresh server: everything imported, exported the same, the same best.
        other = processes.serve("serve_import")
        other_stub = pb_grpc.TuningServiceStub(grpc.insecure_channel(other))
        imported = other_stub.ImportRecords(iter(pb.RecordLine(json=j) for j in lines),
                                            timeout=60)
        assert (imported.imported, imported.duplicates) == (TRIALS, 0), imported
        assert export(other_stub, pb) == lines, "export -> import -> export changed the lines"
        other_best = other_stub.GetBest(
            pb.GetBestRequest(workload=WORKLOAD, target=final.target), timeout=30)
        assert other_best.record == best.record, (other_best.record, best.record)
        again = other_stub.ImportRecords(iter(pb.RecordLine(json=j) for j in lines),
                                         timeout=60)
        assert (again.imported, again.duplicates) == (0, TRIALS), again
    except BaseException:
        for name, _ in processes.children:
            print(f"--- {name}:\n{processes.log(name)[-4000:]}", file=sys.stderr)
        raise
    finally:
        processes.stop()
    shutil.rmtree(scratch)  # kept, with the processes' logs, when the test failed
    print(f"PASS: job {job}: {len(events)} events {kinds[0]}..{kinds[-1]}, {len(lines)} records "
          "exported, imported and exported again unchanged")


if __name__ == "__main__":
    main()
