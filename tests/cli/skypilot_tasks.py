"""The SkyPilot tasks `predict --emit skypilot` and `plan --emit skypilot` write, loaded by SkyPilot's
own code (skypilot from PyPI, in the virtual environment scripts/setup makes): each validated against
SkyPilot's task schema and its resources' schema and built into a sky.Task by its YAML loader, without
touching a cloud. SkyPilot checks an instance type and region against its cloud catalogs, which it
fetches from GitHub on first use; with no network here the loader is given the task without its
resources, which the schema has checked.

Run as: PYTHON skypilot_tasks.py EPOCHCAST (tests/CMakeLists.txt); exits 0 when every task passes.
"""
import copy
import os
import subprocess
import sys
import tempfile

import yaml

# SkyPilot keeps its state under ~/.sky: a folder of the test's own, removed at the end.
HOME = tempfile.TemporaryDirectory()
os.environ["HOME"] = HOME.name
from sky.utils import common_utils, schemas  # noqa: E402
import sky  # noqa: E402

EPOCHCAST = sys.argv[1]
CASES = [
    # (what, epochcast arguments, cloud, instance, nodes, spot, a variable the fabric sets)
    ("p5 on demand", ["predict", "--instance", "p5.48xlarge", "--nodes", "4", "--batch-per-gpu", "256"],
     "aws", "p5.48xlarge", 4, False, "FI_PROVIDER"),
    ("p5 from S3", ["predict", "--instance", "p5.48xlarge", "--nodes", "2", "--batch-per-gpu", "256",
                    "--storage", "s3"], "aws", "p5.48xlarge", 2, False, "FI_PROVIDER"),
    ("GCP A3 on spot", ["predict", "--instance", "a3-highgpu-8g", "--nodes", "2", "--batch-per-gpu", "256",
                        "--pricing", "spot"], "gcp", "a3-highgpu-8g", 2, True, "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"),
    ("Azure ND H100 v5", ["predict", "--instance", "Standard_ND96isr_H100_v5", "--nodes", "2",
                          "--batch-per-gpu", "256"], "azure", "Standard_ND96isr_H100_v5", 2, False,
     "NCCL_TOPO_FILE"),
    ("epochcast's own training", ["predict", "--instance", "p5.48xlarge", "--nodes", "2", "--batch-per-gpu", "256",
                                  "--framework", "epochcast"], "aws", "p5.48xlarge", 2, False, "FI_PROVIDER"),
    ("plan's answer", ["plan", "--deadline", "24h", "--instance", "p5.48xlarge", "--target-top1", "75.9"],
     "aws", "p5.48xlarge", None, False, "FI_PROVIDER"),
]


def validate(config):
    """SkyPilot's checks of a task as sky.Task.from_yaml_config makes them: the task's schema, then
    (sky.Resources.from_yaml_config) the resources' own."""
    common_utils.validate_schema(config, schemas.get_task_schema(), "Invalid task YAML: ")
    common_utils.validate_schema(config["resources"], schemas.get_resources_schema(), "Invalid resources YAML: ")


def check(path, what, args, cloud, instance, nodes, spot, variable):
    with open(path) as f:
        config = yaml.safe_load(f)
    validate(config)
    resources = config["resources"]
    assert resources["cloud"] == cloud, (what, resources)
    assert resources["instance_type"] == instance, (what, resources)
    assert resources["use_spot"] is spot, (what, resources)
    loadable = copy.deepcopy(config)
    loadable.pop("resources")
    task = sky.Task.from_yaml_config(loadable)
    if nodes is not None:
        assert task.num_nodes == nodes, (what, task.num_nodes)
    assert variable in task.envs, (what, sorted(task.envs))
    assert "DATA" in task.envs, (what, sorted(task.envs))
    assert task.run and ("torchrun" in task.run or "epochcast run" in task.run), (what, task.run)
    if "--storage" in args:
        assert task.file_mounts == {"/data/imagenet": "s3://YOUR-BUCKET/imagenet"}, (what, task.file_mounts)
    return config


def main():
    with tempfile.TemporaryDirectory() as folder:
        config = None
        for what, args, cloud, instance, nodes, spot, variable in CASES:
            path = os.path.join(folder, "task.yaml")
            subprocess.run([EPOCHCAST] + args + ["--emit", "skypilot", "-o", path], check=True,
                           stdout=subprocess.DEVNULL)
            config = check(path, what, args, cloud, instance, nodes, spot, variable)
            print("SkyPilot loads the task for", what)
        # The check can fail: SkyPilot's schema refuses what it does not know.
        broken = copy.deepcopy(config)
        broken["resources"]["use_spot"] = "sometimes"
        try:
            validate(broken)
        except Exception as error:  # SkyPilot raises its own ValueError subclass
            print("SkyPilot refuses a task with use_spot: sometimes:", str(error).splitlines()[0])
        else:
            sys.exit("SkyPilot's schema accepted use_spot: sometimes; the check above proves nothing")


if __name__ == "__main__":
    main()
