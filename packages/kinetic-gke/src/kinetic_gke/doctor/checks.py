"""Every check a failed first job needs, in the order a user would fix them; each says PASS,
WARN or FAIL and, when it is not PASS, the exact command that fixes it."""

from __future__ import annotations

from kinetic_gke import settings as gke_settings
from kinetic_gke.doctor.model import Check, Context, Outcome, fail, ok, warn
from kinetic_gke.gcp import cluster_view
from kinetic_gke.k8s import get_credentials_command
from kinetic_gke.provision.manifests import GPU_DRIVER, JOBSET, KUEUE, LWS
from kinetic_gke.provision.spec import JOB_BUCKET_ROLE, REQUIRED_APIS

__all__ = ["CHECKS"]

Result = tuple[Outcome, str, str]
_UP = "kinetic up"


def _up(ctx: Context) -> str:
    s = ctx.spec
    return f"{_UP} --project {s.project} --zone {s.zone} --cluster {s.cluster}"


def credentials(ctx: Context) -> Result:
    endpoint = gke_settings.GCP_API_ENDPOINT.from_env()
    if endpoint and endpoint.startswith("http://"):
        return ok(f"API endpoint {endpoint} is used without credentials")
    import google.auth
    from google.auth import exceptions

    try:
        _creds, found_project = google.auth.default()
    except exceptions.DefaultCredentialsError as exc:
        # Google's message is advice (where to read about ADC): shown whole, never cut.
        return fail(f"no Google credentials: {exc}", "gcloud auth application-default login")
    return ok(f"Google credentials found (their project: {found_project or 'none'})")


def project(ctx: Context) -> Result:
    from kinetic_gke.provision.clients import calling
    from kinetic_protocol import KineticError

    name = f"projects/{ctx.spec.project}"
    try:
        found = calling(
            f"reading project {ctx.spec.project}", ctx.clients.projects.get_project, name=name
        )
    except KineticError as exc:
        fix = f"gcloud projects describe {ctx.spec.project}  (a wrong id? set --project)"
        return fail(str(exc), fix)
    return ok(f"project {ctx.spec.project} ({found.name}) is reachable")


def apis(ctx: Context) -> Result:
    from kinetic_gke.provision.cloud import disabled_apis

    missing = disabled_apis(ctx.clients, ctx.spec.project)
    if missing:
        command = f"gcloud services enable {' '.join(missing)} --project {ctx.spec.project}"
        return fail(f"APIs not enabled: {', '.join(missing)}", command)
    return ok(f"all {len(REQUIRED_APIS)} APIs enabled")


def cluster(ctx: Context) -> Result:
    found = ctx.cluster
    if found is None:
        return fail(f"cluster {ctx.spec.cluster} does not exist in {ctx.spec.zone}", _up(ctx))
    status = found.status.name
    if status != "RUNNING":
        return fail(f"cluster {ctx.spec.cluster} is {status}: {found.status_message}", _up(ctx))
    return ok(f"cluster {ctx.spec.cluster} is RUNNING")


def kube_context(ctx: Context) -> Result:
    s = ctx.spec
    fix = get_credentials_command(s.project, s.zone, s.cluster)
    try:
        connection = ctx.connection
        connection.read("reading the namespace", connection.core.read_namespace, s.namespace)
    except Exception as exc:
        return fail(f"the cluster cannot be reached through the kubeconfig: {exc}", fix)
    return ok(f"kubeconfig context {connection.context} reaches namespace {s.namespace}")


def node_pool(ctx: Context) -> Result:
    from kinetic_gke.capacity import CapacityCheck, ClusterRef

    accelerator = ctx.accelerator
    if accelerator is None:
        return ok("no --accelerator given: pools not checked")
    s = ctx.spec
    found = ctx.cluster
    check = CapacityCheck(
        ClusterRef(s.project, s.zone, s.cluster),
        list_nodes=ctx.connection.list_nodes,
        read_cluster=lambda: cluster_view(found) if found is not None else None,
    )
    verdict = check.verdict(accelerator)
    if verdict.runnable is False:
        from kinetic_gke.capacity import pool_add_command

        return fail(f"no node pool can run {accelerator.name}",
                    pool_add_command(accelerator, check.where))  # fmt: skip
    if verdict.runnable is None:
        return warn(verdict.reason)
    return ok(f"{accelerator.name}: {verdict.reason}")


def _jobs_account(ctx: Context) -> str:
    from kinetic_gke.provision.incluster import WI_ANNOTATION

    connection = ctx.connection
    account = connection.read_or_none(
        "reading the service account", connection.core.read_namespaced_service_account,
        ctx.spec.ksa, ctx.spec.namespace,
    )  # fmt: skip
    annotations = ((account or {}).get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(WI_ANNOTATION, ""))


def bucket(ctx: Context) -> Result:
    from kinetic_gke.provision.accounts import project_policy
    from kinetic_gke.provision.cloud import get_bucket

    s = ctx.spec
    if get_bucket(s, ctx.clients) is None:
        return fail(f"bucket gs://{s.bucket} does not exist", _up(ctx))
    email = _jobs_account(ctx)
    member = f"serviceAccount:{email}"
    granted = any(
        binding.get("role") in (JOB_BUCKET_ROLE, "roles/storage.objectAdmin", "roles/storage.admin")
        and member in binding.get("members", [])
        for binding in project_policy(s, ctx.clients).get("bindings", [])
    )
    if not email or not granted:
        who = member if email else "serviceAccount:GSA"
        fix = (f"gcloud storage buckets add-iam-policy-binding gs://{s.bucket} "
               f"--member={who} --role={JOB_BUCKET_ROLE}")  # fmt: skip
        return fail(
            f"the pods' identity ({email or 'none'}) cannot read and write gs://{s.bucket}", fix
        )
    return ok(f"gs://{s.bucket} exists; pods run as {email}, which can read and write it")


def registry(ctx: Context) -> Result:
    from kinetic_gke.provision.cloud import get_repository

    s = ctx.spec
    if get_repository(s, ctx.clients) is None:
        fix = (f"gcloud artifacts repositories create {s.repository} --repository-format=docker "
               f"--location {s.region} --project {s.project}")  # fmt: skip
        return fail(f"Artifact Registry repository {s.repository} ({s.region}) is missing", fix)
    return ok(f"images go to {s.region}-docker.pkg.dev/{s.project}/{s.repository}")


def workload_identity(ctx: Context) -> Result:
    from kinetic_gke.provision.accounts import WORKLOAD_IDENTITY_ROLE
    from kinetic_gke.provision.iam_api import add_binding

    s = ctx.spec
    email = _jobs_account(ctx)
    if not email:
        return fail(f"service account {s.namespace}/{s.ksa} has no Workload Identity annotation",
                    _up(ctx))  # fmt: skip
    policy = ctx.clients.iam.get_policy(s.project, email)
    if add_binding(policy, WORKLOAD_IDENTITY_ROLE, s.ksa_member):
        fix = (f"gcloud iam service-accounts add-iam-policy-binding {email} "
               f"--role {WORKLOAD_IDENTITY_ROLE} --member '{s.ksa_member}'")  # fmt: skip
        return fail(f"{s.namespace}/{s.ksa} may not act as {email}", fix)
    return ok(f"{s.namespace}/{s.ksa} acts as {email}")


def lws(ctx: Context) -> Result:
    from kinetic_gke.provision.incluster import lws_version

    version = lws_version(ctx.connection)
    if version is not None:
        return ok(f"LeaderWorkerSet API served ({version})")
    needed = ctx.accelerator is not None and ctx.accelerator.multi_host
    message = "LeaderWorkerSet is not installed (multi-host TPU jobs need it)"
    fix = f"{_up(ctx)}  (installs LeaderWorkerSet {LWS.version}; or: {LWS.manual_command})"
    return (fail if needed else warn)(message, fix)


def jobset(ctx: Context) -> Result:
    from kinetic_gke.provision.incluster import jobset_version

    version = jobset_version(ctx.connection)
    if version is not None:
        return ok(f"JobSet API served ({version})")
    return warn(
        "JobSet is not installed (multi-node GPU and multislice TPU jobs need it)",
        f"{_up(ctx)}  (installs JobSet {JOBSET.version}; or: {JOBSET.manual_command})",
    )


def kueue(ctx: Context) -> Result:
    """Which mode the cluster is in (queued by Kueue, or not), Kueue's controller, and the
    namespace's default queue, which jobs that name none go through."""
    from kinetic_gke.provision.kueue_queues import CONTROLLER
    from kinetic_protocol.queueing import DEFAULT_QUEUE

    state = ctx.kueue
    if state.api is None:
        return warn(
            "no Kueue: jobs run unqueued, each asking for its nodes at once (no queues, "
            "quotas or priorities)",
            f"{_up(ctx)}  (installs Kueue {KUEUE.version} and its queues; or: "
            f"{KUEUE.manual_command})",
        )
    serving = f"Kueue {state.release or ''} serving (API {state.api})".replace("  ", " ")
    if state.controller is not None and state.controller[0] < 1:
        namespace, name = CONTROLLER
        return fail(
            f"{serving}, but its controller {namespace}/{name} has {state.controller[0]} of "
            f"{state.controller[1]} replicas available: no job is admitted",
            f"kubectl -n {namespace} get pods",
        )
    if DEFAULT_QUEUE not in [queue.name for queue in state.queues]:
        return fail(
            f"{serving}, but namespace {ctx.spec.namespace} has no LocalQueue {DEFAULT_QUEUE}, "
            "which jobs that name no queue are admitted through",
            _up(ctx),
        )
    return ok(f"{serving}; jobs queue in namespace {ctx.spec.namespace}")


def queues(ctx: Context) -> Result:
    """Each queue of the namespace: admitted and pending jobs, quota in use."""
    state = ctx.kueue
    if state.api is None:
        return ok("no Kueue: no queues")
    if not state.queues:
        return ok(f"no queues in namespace {ctx.spec.namespace}")
    described = "; ".join(queue.describe() for queue in state.queues)
    inactive = [queue.name for queue in state.queues if queue.inactive]
    if inactive:
        return warn(described, f"{_up(ctx)}  (makes the cluster queues Kinetic's queues use)")
    return ok(described)


def fuse(ctx: Context) -> Result:
    found = ctx.cluster
    if found is not None and cluster_view(found).fuse_driver:
        return ok("GCS FUSE CSI driver enabled")
    s = ctx.spec
    fix = (f"gcloud container clusters update {s.cluster} --update-addons GcsFuseCsiDriver=ENABLED "
           f"--location {s.zone} --project {s.project}")  # fmt: skip
    message = "GCS FUSE CSI driver is off (Data(fuse=True) needs it)"
    return (fail if ctx.fuse else warn)(message, fix)


def gpu_driver(ctx: Context) -> Result:
    from kinetic_gke.provision.incluster import gpu_driver_installed

    found = ctx.cluster
    pools = cluster_view(found).pools if found is not None else ()
    needing = [pool.name for pool in pools if pool.needs_gpu_driver]
    if not any(pool.hardware.gpu_type for pool in pools):
        return ok("no GPU pools")
    if needing and not gpu_driver_installed(ctx.connection):
        return fail(f"GPU pools without a driver installer: {', '.join(needing)}",
                    GPU_DRIVER.manual_command)  # fmt: skip
    return ok("GPU drivers installed")


CHECKS = (
    Check("credentials", credentials),
    Check("project", project),
    Check("apis", apis),
    Check("cluster", cluster),
    Check("kube-context", kube_context),
    Check("node-pool", node_pool),
    Check("bucket", bucket),
    Check("registry", registry),
    Check("workload-identity", workload_identity),
    Check("lws", lws),
    Check("jobset", jobset),
    Check("kueue", kueue),
    Check("queues", queues),
    Check("fuse", fuse),
    Check("gpu-driver", gpu_driver),
)
