"""The SkyPilot tasks `predict --emit skypilot` and `plan --emit skypilot` write, loaded and checked by
SkyPilot's own code (skypilot from PyPI, in the virtual environment scripts/setup makes), without touching
a cloud or the network: each validated against SkyPilot's task schema and its resources' schema, built
into a sky.Task by its YAML loader, checked by sky.Task.validate as `sky launch` checks a task (the
instance type is in its cloud's catalog, the region is one of the cloud's), then given the optimizer's
verdict (the cloud's get_feasible_launchable_resources: a zone of the region sells the instance type, on
spot where asked), with the accelerators the catalog gives the instance type.

The test's own HOME is given the rows of SkyPilot's cloud catalogs the tasks need, transcribed from the
published ones (tests/fixtures/skypilot-catalog/README.md: whence, and why SkyPilot fetches none), and any
request goes to a proxy at a closed local port, so that a catalog the rows lack fails at once instead of
being fetched from GitHub.

Run as: PYTHON skypilot_tasks.py EPOCHCAST (tests/CMakeLists.txt); exits 0 when every task passes.
"""
import copy
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

CATALOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "fixtures", "skypilot-catalog")

# SkyPilot keeps its state under ~/.sky: a folder of the test's own, removed at the end.
HOME = tempfile.TemporaryDirectory()
os.environ["HOME"] = HOME.name
os.environ.pop("SKY_RUNTIME_DIR", None)  # else SkyPilot keeps its catalogs there instead of under HOME
for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
    os.environ[name] = "http://127.0.0.1:9"
for name in ("NO_PROXY", "no_proxy"):
    os.environ.pop(name, None)
# Where the AWS CLI is installed SkyPilot runs `aws configure list` to name the AWS account whose zone names
# it would use: with no credentials of the caller's and no instance metadata, the CLI finds none without asking
# the network, and SkyPilot keeps the catalog's zone IDs.
for name in [name for name in os.environ if name.startswith("AWS_")]:
    del os.environ[name]
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
from sky.skylet import constants  # noqa: E402
from sky.utils import common_utils, schemas  # noqa: E402
import sky  # noqa: E402

shutil.copytree(CATALOG, os.path.join(HOME.name, ".sky", "catalogs", constants.CATALOG_SCHEMA_VERSION),
                ignore=shutil.ignore_patterns("*.md"))

EPOCHCAST = sys.argv[1]
CASES = [
    # (what, epochcast arguments, cloud, instance, nodes, spot, a variable the fabric sets)
    ("p5 on demand", ["predict", "--instance", "p5.48xlarge", "--nodes", "4", "--batch-per-gpu", "256"],
     "aws", "p5.48xlarge", 4, False, "FI_PROVIDER"),
    ("p5 from S3", ["predict", "--instance", "p5.48xlarge", "--nodes", "2", "--batch-per-gpu", "256",
                    "--storage", "s3"], "aws", "p5.48xlarge", 2, False, "FI_PROVIDER"),
    ("p5 on spot", ["predict", "--instance", "p5.48xlarge", "--nodes", "2", "--batch-per-gpu", "256",
                    "--pricing", "spot"], "aws", "p5.48xlarge", 2, True, "FI_PROVIDER"),
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
# The accelerators SkyPilot's catalog gives each instance type (ND96isr_H100_v5's 12: the fixture's README).
ACCELERATORS = {"p5.48xlarge": {"H100": 8}, "a3-highgpu-8g": {"H100": 8},
                "Standard_ND96isr_H100_v5": {"H100": 12}}


def validate(config):
    """SkyPilot's checks of a task as sky.Task.from_yaml_config makes them: the task's schema, then
    (sky.Resources.from_yaml_config) the resources' own."""
    common_utils.validate_schema(config, schemas.get_task_schema(), "Invalid task YAML: ")
    common_utils.validate_schema(config["resources"], schemas.get_resources_schema(), "Invalid resources YAML: ")


def load(config):
    """The task SkyPilot's loader builds, checked by sky.Task.validate, its resources and the launchable
    resources the cloud finds for them (none where no zone of the region sells them)."""
    task = sky.Task.from_yaml_config(copy.deepcopy(config))
    task.validate()
    (resources,) = task.resources
    feasible = resources.cloud.get_feasible_launchable_resources(resources, task.num_nodes)
    return task, resources, feasible.resources_list


def check(path, what, args, cloud, instance, nodes, spot, variable):
    with open(path) as f:
        config = yaml.safe_load(f)
    validate(config)
    resources = config["resources"]
    assert resources["cloud"] == cloud, (what, resources)
    assert resources["instance_type"] == instance, (what, resources)
    assert resources["use_spot"] is spot, (what, resources)
    task, loaded, feasible = load(config)
    assert str(loaded.cloud).lower() == cloud and loaded.instance_type == instance, (what, loaded)
    assert loaded.region == resources["region"] and loaded.use_spot is spot, (what, loaded)
    assert feasible, (what, "SkyPilot finds no zone of the region selling it", loaded)
    assert loaded.accelerators == ACCELERATORS[instance], (what, loaded.accelerators)
    if nodes is not None:
        assert task.num_nodes == nodes, (what, task.num_nodes)
    assert variable in task.envs, (what, sorted(task.envs))
    assert "DATA" in task.envs, (what, sorted(task.envs))
    assert task.run and ("torchrun" in task.run or "epochcast run" in task.run), (what, task.run)
    if "--storage" in args:
        assert task.file_mounts == {"/data/imagenet": "s3://YOUR-BUCKET/imagenet"}, (what, task.file_mounts)
    print(f"SkyPilot loads and checks the task for {what}: {feasible[0]} in {loaded.region}")
    return config


def main():
    with tempfile.TemporaryDirectory() as folder:
        configs = {}
        for what, args, cloud, instance, nodes, spot, variable in CASES:
            path = os.path.join(folder, "task.yaml")
            subprocess.run([EPOCHCAST] + args + ["--emit", "skypilot", "-o", path], check=True,
                           stdout=subprocess.DEVNULL)
            configs[what] = check(path, what, args, cloud, instance, nodes, spot, variable)
        # The checks can fail: SkyPilot's schema refuses what it does not know,
        broken = copy.deepcopy(configs["p5 on demand"])
        broken["resources"]["use_spot"] = "sometimes"
        try:
            validate(broken)
        except Exception as error:  # SkyPilot raises its own ValueError subclass
            print("SkyPilot refuses a task with use_spot: sometimes:", str(error).splitlines()[0])
        else:
            sys.exit("SkyPilot's schema accepted use_spot: sometimes; the check above proves nothing")
        # its catalog an instance type the cloud does not sell,
        broken = copy.deepcopy(configs["p5 on demand"])
        broken["resources"].update(cloud="gcp", region="us-central1")
        try:
            load(broken)
        except ValueError as error:
            print("SkyPilot refuses p5.48xlarge on GCP:", str(error).splitlines()[0])
        else:
            sys.exit("SkyPilot accepted p5.48xlarge on GCP; the catalog check above proves nothing")
        # and spot in a region that sells the instance type on demand only (no spot price in the catalog).
        broken = copy.deepcopy(configs["p5 on spot"])
        broken["resources"]["region"] = "ap-northeast-2"
        if load(broken)[2]:
            sys.exit("SkyPilot found p5.48xlarge on spot in ap-northeast-2; the spot check above proves nothing")
        broken["resources"]["use_spot"] = False
        assert load(broken)[2], "SkyPilot finds no p5.48xlarge on demand in ap-northeast-2"
        print("SkyPilot finds no zone of ap-northeast-2 selling p5.48xlarge on spot, and some on demand")


if __name__ == "__main__":
    main()
