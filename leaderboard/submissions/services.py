"""Writes: results bundles uploaded by users, verified on arrival, and their moderation.

One service for the three doors (the web form, ``POST /api/submissions/``, ``mirrorbench
submit``). An upload is checked before anything is stored: its size, then every line (UTF-8,
JSON, depth, the schema), then a full replay of every episode's actions through the dynamics,
recomputing distances and metrics (``evaluation.verify``, what ``mirrorbench verify`` runs).
Numbers in the bundle are never trusted. A bundle that fails any check stores nothing and
gets every problem back; one that passes becomes a private run of its owner, stored with its
model entry in one transaction, and its bundle is kept once by content hash.

Verification runs in the request: reading and replaying a random agent's full bundle takes
about 55 ms, and checking and storing an 8 MiB bundle of a reasoning model 0.64 s
(``docs/submissions.md`` has the figures). Each user may verify a few bundles at once
(``MIRRORBENCH_MAX_ACTIVE_VERIFICATIONS``) and submit so many a day
(``MIRRORBENCH_MAX_SUBMISSIONS_PER_DAY``); staff have no caps.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.base import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.bundle import BundleError, read_bundle
from evaluation.config import RunConfig
from evaluation.registry import AgentSpecError, model_spec
from evaluation.verify import MAX_PROBLEMS, verify_bundle
from evaluation.vocabulary import LEVELS, MAIN_CONDITION
from leaderboard.accounts.mail import confirmed_email_required
from leaderboard.accounts.roles import is_moderator
from leaderboard.boards.entries import MODEL_METADATA, entry_name_match, model_entry_create
from leaderboard.boards.scores import run_list_if_complete, run_list_on_leaderboard
from leaderboard.data_version import data_version_bump
from leaderboard.errors import FieldError
from leaderboard.models import Episode, ModelEntry, Run, Submission
from leaderboard.runs.imports import store_verified_bundle
from leaderboard.runs.services import run_create
from leaderboard.submissions.selectors import submission_warnings
from mirrorbench_site.cache import limits_cache
from simulation.catalogue import scene_set
from simulation.renderer import DEFAULT_SIZE, frame_key

SHOWN_PROBLEMS = 50
"""Problems returned for a bundle that does not verify; ``mirrorbench verify`` lists up to
``evaluation.verify.MAX_PROBLEMS``."""
CHUNK = 1024 * 1024
VERIFY_SLOT_S = 300
"""A verification slot is held at most this long (a crashed request frees it by then)."""


class SubmissionRejected(Exception):
    """The bundle does not verify: ``problems`` says each discrepancy; nothing was stored."""

    def __init__(self, problems: list[str], total: int) -> None:
        super().__init__(f"{total} problems")
        self.problems, self.total = problems, total


class QuotaExceeded(Exception):
    """The user is over a submission cap; the message says which and when it frees up."""


@dataclass(frozen=True)
class Submitted:
    submission: Submission
    duplicate: bool
    """The same owner had uploaded these exact bytes before: nothing new was stored."""


def _quota_check(user: Any) -> None:
    if user.is_staff:
        return
    since = timezone.now() - timedelta(days=1)
    today = Submission.objects.filter(owner=user, created__gte=since).count()
    cap = settings.MIRRORBENCH_MAX_SUBMISSIONS_PER_DAY
    if today >= cap:
        raise QuotaExceeded(
            f"you submitted {today} bundles in the last 24 hours, the most allowed is {cap} a "
            "day: wait, or ask a moderator"
        )


@contextmanager
def _verification_slot(user: Any) -> Iterator[None]:
    """Hold one of the user's verification slots for the duration of the block."""
    if user.is_staff:
        yield
        return
    cap = settings.MIRRORBENCH_MAX_ACTIVE_VERIFICATIONS
    for slot in range(cap):
        key = f"verifying:{user.pk}:{slot}"
        if limits_cache.add(key, 1, VERIFY_SLOT_S):
            try:
                yield
            finally:
                limits_cache.delete(key)
            return
    raise QuotaExceeded(
        f"you have {cap} bundles being verified, the most allowed at once: wait for one to finish"
    )


SPOOL_MAX_AGE_S = 3600
"""A spool folder this old is removed whoever made it (its process is gone or stuck)."""


def _spool_root() -> Path:
    """The folder where uploads are spooled while they are verified (under the data directory,
    so what a killed process left there is found and removed: ``_spool_sweep``)."""
    root = Path(settings.DATA_DIR) / "tmp" / "uploads"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _spool_prefix() -> str:
    return f"verify-{socket.gethostname()}-{os.getpid()}-"


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs; a zombie (killed, not yet reaped: a container
    whose first process reaps nothing keeps them for ever) is dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc here: a process that answers a signal is taken as running
    # "pid (command) state ...": the command may hold spaces and parentheses.
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _spool_sweep(root: Path) -> None:
    """Remove the spool folders of uploads whose process died while verifying them (killed, or
    the machine restarted): each folder is named after its host and process, so those of this
    host whose process is gone go at once, and any folder after ``SPOOL_MAX_AGE_S``."""
    host, now = socket.gethostname(), time.time()
    for folder in root.glob("verify-*"):
        owner, _, _ = folder.name.removeprefix("verify-").rpartition("-")
        folder_host, _, pid = owner.rpartition("-")
        try:
            old = now - folder.stat().st_mtime > SPOOL_MAX_AGE_S
        except FileNotFoundError:
            continue  # its upload has just finished
        dead = folder_host == host and pid.isdigit() and not _process_alive(int(pid))
        if old or dead:
            shutil.rmtree(folder, ignore_errors=True)


def _spool(chunks: Iterable[bytes], folder: Path) -> tuple[Path, str, int]:
    """Write the upload to a file in ``folder``, hashing it; refuse it past the size limit."""
    limit = settings.MIRRORBENCH_MAX_BUNDLE_BYTES
    digest, size = hashlib.sha256(), 0
    path = folder / "bundle.jsonl"
    with path.open("wb") as out:
        for chunk in chunks:
            size += len(chunk)
            if size > limit:
                raise FieldError(
                    "bundle",
                    f"the file is larger than the limit of {limit} bytes "
                    "(MIRRORBENCH_MAX_BUNDLE_BYTES); a full bundle is usually 2-10 MB",
                )
            digest.update(chunk)
            out.write(chunk)
    if size == 0:
        raise FieldError("bundle", "the file is empty: expected a results bundle (JSON lines)")
    return path, digest.hexdigest(), size


def _entry_for(*, user: Any, name: str) -> tuple[str, ModelEntry | None]:
    """Return the name's display form and the owner's entry of that name, None for a new one.

    Refuse anyone else's entry, and a name that looks like another entry's.
    """
    name, existing = entry_name_match(name=name, field="model_name")
    if existing is None:
        return name, None
    if existing.owner_id == user.pk or is_moderator(user):
        return name, existing
    raise FieldError(
        "model_name",
        f"{existing.name!r} is the name of an entry that is not yours; choose another name "
        "(the paper's rows, the baselines and other users' entries are taken)",
    )


def _reproduce_agent(data: dict[str, Any]) -> str:
    provider, model = data.get("reproduce_provider") or "", data.get("reproduce_model") or ""
    if bool(provider) != bool(model.strip()):
        field = "reproduce_model" if provider else "reproduce_provider"
        raise FieldError(field, "name both the provider and the model, or neither")
    if not provider:
        return ""
    try:
        return model_spec(provider, model)
    except AgentSpecError as exc:
        raise FieldError("reproduce_provider", str(exc)) from None


def served_image_sizes() -> list[int]:
    """The frame sides this site serves, the only ones an upload may declare: the gallery's
    (1024), the browser episodes' (MIRRORBENCH_PLAY_IMAGE_SIZE) and MIRRORBENCH_IMAGE_SIZES."""
    return sorted(
        {DEFAULT_SIZE, int(settings.MIRRORBENCH_PLAY_IMAGE_SIZE)}
        | {int(s) for s in settings.MIRRORBENCH_IMAGE_SIZES}
    )


def _image_size_problems(header: dict[str, Any]) -> list[str]:
    """Refuse an image size the site does not serve: every replay of the run would render (and
    store) frames of that size on demand; a 4096 px frame takes seconds and megabytes."""
    renderer = header.get("renderer")
    size = renderer.get("image_size") if isinstance(renderer, dict) else None
    sizes = served_image_sizes()
    if isinstance(size, int) and not isinstance(size, bool) and size in sizes:
        return []
    served = ", ".join(str(s) for s in sizes)
    return [
        f"header: renderer.image_size is {size!r}; this site shows frames of {served} px only: "
        f"run again with --image-size {DEFAULT_SIZE}"
    ]


def _frame_key_problems(bundle: Any) -> list[str]:
    """Each step's ``frame_key`` must be the key of the frame its header and hand cell name:
    ``frame_key(renderer.version, scene, the hand's cell before the step, image size)``, under
    the header's condition.

    The replay page says the agent saw "these very pixels" when a step's key equals the key
    it renders; a key that does not agree with the header would make that claim false.
    Called after ``verify_bundle``: the records are well formed and the hand cells replayed.
    """
    renderer = bundle.header["renderer"]
    version, size = str(renderer["version"]), int(renderer["image_size"])
    condition = str(bundle.header.get("condition", MAIN_CONDITION))
    problems: list[str] = []
    for number, episode in enumerate(bundle.episodes, 1):
        cell: tuple[int, ...] = (0, 0, 0)
        for step in episode["steps"]:
            key = step.get("frame_key")
            expected = frame_key(
                version,
                episode["scene_id"],
                cell,  # type: ignore[arg-type]
                size,
                condition=condition,
            )
            if key is not None and key != expected:
                problems.append(
                    f"episode {number} ({episode['scene_id']}, level {episode['level']}), step "
                    f"{step['index']}: frame_key {str(key)[:64]!r} is not {expected!r}, the key "
                    "of the frame the header's renderer version and image size and the hand's "
                    "cell before the step name"
                )
                if len(problems) >= SHOWN_PROBLEMS:
                    return problems
            cell = tuple(step["hand_cell"])
    return problems


def bundle_path(sha256: str) -> str:
    """Return where a bundle is kept in storage, by its content hash."""
    return f"submissions/{sha256[:2]}/{sha256}.jsonl"


def submission_create(*, user: Any, chunks: Iterable[bytes], data: dict[str, Any]) -> Submitted:
    """Check, verify and store an uploaded bundle as a private run of ``user``.

    ``data`` holds the entry's metadata, already validated by the door's form or serializer:
    ``model_name``, ``kind``, and optionally ``organisation``, ``params_b``, ``link`` and the
    model's facts (``MODEL_METADATA``: they go to a new entry; an existing one keeps its own).

    Raises:
        QuotaExceeded: The user is over a daily or concurrent cap.
        FieldError: The file is too large, empty or not a bundle (the message names the line
            and what was expected), or the model name is someone else's.
        SubmissionRejected: The bundle does not verify.
    """
    confirmed_email_required(user)
    _quota_check(user)
    reproduce_agent = _reproduce_agent(data)
    name, entry = _entry_for(user=user, name=data["model_name"])
    spool = _spool_root()
    _spool_sweep(spool)
    with (
        _verification_slot(user),
        tempfile.TemporaryDirectory(dir=spool, prefix=_spool_prefix()) as folder,
    ):
        started = time.perf_counter()
        path, sha256, size = _spool(chunks, Path(folder))
        existing = Submission.objects.filter(owner=user, sha256=sha256).first()
        if existing is not None:
            return Submitted(existing, duplicate=True)
        try:
            bundle = read_bundle(path)
        except BundleError as exc:
            message = str(exc).replace(str(path), "bundle")
            raise FieldError("bundle", message) from None
        # Bounded in time and memory by the file's size, in this process: see "Limits" in
        # docs/bundle-format.md. Past MAX_PROBLEMS checking stops, and its last line says so.
        problems = verify_bundle(bundle)
        if problems:
            shown = problems[:SHOWN_PROBLEMS]
            if len(problems) > MAX_PROBLEMS:
                shown[-1] = problems[-1]  # "checking stopped after ..."
            raise SubmissionRejected(shown, min(len(problems), MAX_PROBLEMS))
        problems = _image_size_problems(bundle.header) or _frame_key_problems(bundle)
        if problems:
            raise SubmissionRejected(problems, len(problems))
        seconds = time.perf_counter() - started
        expected = len(scene_set()) * len(LEVELS)
        episodes = len(bundle.episodes)
        stored_at = bundle_path(sha256)
        if not default_storage.exists(stored_at):
            with path.open("rb") as handle:
                default_storage.save(stored_at, File(handle))
        try:
            with transaction.atomic():
                if entry is None:
                    entry = model_entry_create(
                        name=name,
                        kind=data["kind"],
                        params_b=data.get("params_b"),
                        owner=user,
                        organisation=data.get("organisation") or "",
                        links=[{"label": "Code or paper", "url": data["link"]}]
                        if data.get("link")
                        else [],
                        field="model_name",
                        metadata={key: data.get(key) for key in MODEL_METADATA},
                    )
                run = store_verified_bundle(
                    model_entry=entry, bundle=bundle, owner=user, visibility=Run.Visibility.PRIVATE
                )
                submission = Submission.objects.create(
                    owner=user,
                    sha256=sha256,
                    bundle_path=stored_at,
                    bundle_bytes=size,
                    model_name=entry.name,
                    organisation=data.get("organisation") or "",
                    kind=data["kind"],
                    params_b=data.get("params_b"),
                    link=data.get("link") or "",
                    episodes=episodes,
                    partial=episodes < expected,
                    run=run,
                    report={
                        "verified_s": round(seconds, 3),
                        "episodes": episodes,
                        "expected": expected,
                        "agent": bundle.header.get("agent", {}).get("name"),
                        "checks": [
                            "every line is UTF-8 JSON within the size and depth limits",
                            "the header and every episode match the bundle schema",
                            "the benchmark version, scenes and levels are the protocol's",
                            "no episode appears twice",
                            "every step's action was replayed through the dynamics: hand cells, "
                            "collisions and distances recomputed",
                            "every episode's metrics recomputed from its distances",
                            "the image size is one the site shows, and every step's frame key "
                            "is the key of the frame its header and hand cell name",
                        ],
                    },
                    reproduce_agent=reproduce_agent,
                    reproduce_base_url=data.get("reproduce_base_url") or "",
                )
                submission_reproduce(
                    submission=submission, api_key=data.get("reproduce_api_key") or None
                )
        except (IntegrityError, FieldError) as exc:
            # A race with a twin request: the same bytes (the other one stored them) or the
            # same new entry name, or a look-alike (someone else took it a moment ago).
            twin = Submission.objects.filter(owner=user, sha256=sha256).first()
            if twin is not None:
                return Submitted(twin, duplicate=True)
            if isinstance(exc, FieldError):
                raise
            raise FieldError(
                "model_name", f"an entry named {name!r} was created a moment ago: choose another"
            ) from None
    return Submitted(submission, duplicate=False)


def _locked(submission: Submission) -> Submission:
    return Submission.objects.select_for_update().select_related("run").get(pk=submission.pk)


def submission_publish(*, submission: Submission, user: Any) -> Submission:
    """Ask for review: the owner's private submission goes to the moderators' queue."""
    with transaction.atomic():
        submission = _locked(submission)
        if submission.owner_id != user.pk:
            raise FieldError("submission", "only its owner may publish a submission")
        if submission.review not in (Submission.Review.DRAFT, Submission.Review.REFUSED):
            raise FieldError(
                "submission", f"this submission is already {submission.get_review_display()}"
            )
        submission.review = Submission.Review.PENDING
        submission.save(update_fields=["review"])
    return submission


def submission_review(
    *,
    submission: Submission,
    moderator: Any,
    decision: str,
    note: str = "",
    allow_partial: bool = False,
) -> Submission:
    """A moderator's decision: ``approve``, ``refuse`` (a reason the owner sees) or ``flag``.

    Approving makes the run public and lists it on the board if it is complete, or if it is
    partial and ``allow_partial``; refusing keeps it private; flagging a published entry takes
    it off the board, with the note shown on its model page. Nobody decides on their own
    submission, not even a moderator: another moderator must. Approving a bundle as a model
    (proprietary or open weights) when ``submission_warnings`` finds it looks like a
    baseline's needs a note saying why.
    """
    if submission.owner_id is not None and submission.owner_id == getattr(moderator, "pk", None):
        raise FieldError(
            "decision",
            "this is your own submission: another moderator must review it "
            "(nobody approves, refuses or flags their own)",
        )
    note = note.strip()
    if decision not in ("approve", "refuse", "flag"):
        raise FieldError("decision", f"expected approve, refuse or flag, got {decision!r}")
    if decision in ("refuse", "flag") and not note:
        raise FieldError("note", f"say why you {decision} it: the owner reads this")
    models = (ModelEntry.Kind.PROPRIETARY, ModelEntry.Kind.OPEN_WEIGHTS)
    if decision == "approve" and submission.kind in models and not note:
        warnings = submission_warnings(submission=submission)
        if warnings:
            raise FieldError(
                "note",
                f"this bundle looks like a baseline's, not a model's ({len(warnings)} "
                "warning" + ("s" if len(warnings) > 1 else "") + " above): approving it as a "
                "model needs a written reason",
            )
    with transaction.atomic():
        submission = _locked(submission)
        run = submission.run
        if run is None:
            raise FieldError("submission", "this submission has no run any more")
        allowed = {
            "approve": (Submission.Review.PENDING, Submission.Review.FLAGGED),
            "refuse": (Submission.Review.PENDING,),
            "flag": (Submission.Review.APPROVED,),
        }[decision]
        if submission.review not in allowed:
            raise FieldError(
                "decision",
                f"cannot {decision} a submission that is {submission.get_review_display()}",
            )
        if decision == "approve":
            Run.objects.filter(pk=run.pk).update(visibility=Run.Visibility.PUBLIC)
            run.visibility = Run.Visibility.PUBLIC
            submission.allow_partial = allow_partial
            if not run_list_if_complete(run=run) and submission.partial and allow_partial:
                run_list_on_leaderboard(run=run)
            submission.review = Submission.Review.APPROVED
        elif decision == "refuse":
            submission.review = Submission.Review.REFUSED
        else:
            Run.objects.filter(pk=run.pk).update(listed=False)
            submission.review = Submission.Review.FLAGGED
        submission.review_note = note
        submission.reviewed_by = moderator
        submission.reviewed = timezone.now()
        data_version_bump()  # what the tables show changed: cached copies are stale
        submission.save(
            update_fields=["review", "review_note", "reviewed_by", "reviewed", "allow_partial"]
        )
    return submission


def _reproduction_sample(submission: Submission, run: Run) -> list[tuple[str, int]]:
    """A random sample of the submission's completed episodes, seeded by its content hash."""
    import random

    pairs = sorted(
        run.episodes.filter(status=Episode.Status.COMPLETED).values_list("scene__scene_id", "level")
    )
    size = min(settings.MIRRORBENCH_REPRODUCE_SAMPLE, len(pairs))
    return sorted(random.Random(submission.sha256).sample(pairs, size))


def submission_reproduce(*, submission: Submission, api_key: str | None = None) -> Run | None:
    """Start the server's re-run of a sample of a submission's episodes with its named model.

    The same rules as hosted runs: the endpoint must be one the server may call, the key is
    encrypted and erased when the run ends. The run is private, owned by the submitter, and
    never listed. Returns the run, or None when the submission names no model.

    Raises:
        FieldError: The model or the endpoint is refused (``reproduce_agent``,
            ``reproduce_base_url``).
    """
    if not submission.reproduce_agent or submission.run is None:
        return None
    header = submission.run.metadata or {}
    renderer = header.get("renderer", {})
    config = RunConfig(
        agent=submission.reproduce_agent,
        base_url=submission.reproduce_base_url or None,
        seed=int(header.get("seed", 0) or 0),
        image_size=int(renderer.get("image_size", 1024)),
        image_history=int(renderer.get("image_history", 1)),
        pairs=tuple(_reproduction_sample(submission, submission.run)),
        use_cache=False,  # cached answers would "reproduce" anything
    )
    try:
        run = run_create(
            model_entry=submission.run.model_entry,
            config=config,
            owner=submission.owner,
            visibility=Run.Visibility.PRIVATE,
            api_key=api_key or None,
        )
    except FieldError as exc:
        field = {"agent": "reproduce_agent", "base_url": "reproduce_base_url"}.get(exc.field)
        raise FieldError(field or exc.field, exc.message) from None
    Submission.objects.filter(pk=submission.pk).update(reproduction_run=run)
    submission.reproduction_run = run
    return run


def _steps(run: Run) -> dict[tuple[str, int], tuple[list[int | None], float | None, bool]]:
    episodes = run.episodes.select_related("scene").prefetch_related("steps")
    return {
        (e.scene.scene_id, e.level): (
            [s.option for s in e.steps.all()],
            e.avg,
            e.status == Episode.Status.COMPLETED,
        )
        for e in episodes
    }


def reproduction_compare(*, bundle_run: Run, rerun: Run) -> dict[str, Any]:
    """Compare a re-run with the submitted episodes it re-played, step by step.

    Per episode: the share of the submitted steps whose option the re-run chose too (step by
    step, until one of the two ended), the first step where they differ, and the difference
    of AVG. Overall: the mean share, how many episodes agree at every step, and the mean
    absolute difference of AVG.
    """
    submitted, replayed = _steps(bundle_run), _steps(rerun)
    episodes: list[dict[str, Any]] = []
    for key, (again, avg_again, completed) in sorted(replayed.items()):
        options, avg, _ = submitted[key]
        shared = min(len(options), len(again))
        same = sum(1 for a, b in zip(options, again, strict=False) if a == b)
        first = next((i for i in range(shared) if options[i] != again[i]), None)
        if first is None and len(options) != len(again):
            first = shared
        episodes.append(
            {
                "scene": key[0],
                "level": key[1],
                "completed": completed,
                "steps": len(options),
                "steps_rerun": len(again),
                "agreement": same / len(options) if options else 1.0,
                "first_difference": first,
                "avg": avg,
                "avg_rerun": avg_again,
                "avg_difference": None
                if avg is None or avg_again is None
                else round(avg_again - avg, 6),
            }
        )
    finished = [e for e in episodes if e["completed"]]
    differences = [abs(e["avg_difference"]) for e in finished if e["avg_difference"] is not None]
    return {
        "episodes": episodes,
        "sampled": len(episodes),
        "completed": len(finished),
        "step_agreement": sum(e["agreement"] for e in finished) / len(finished)
        if finished
        else None,
        "identical_episodes": sum(1 for e in finished if e["first_difference"] is None),
        "mean_abs_avg_difference": sum(differences) / len(differences) if differences else None,
    }


def reproduction_record(*, run: Run) -> bool:
    """Store the comparison when a reproduction run ends; return whether ``run`` was one."""
    submission = Submission.objects.select_related("run").filter(reproduction_run=run).first()
    if submission is None or submission.run is None:
        return False
    report = reproduction_compare(bundle_run=submission.run, rerun=run)
    Submission.objects.filter(pk=submission.pk).update(reproduction=report)
    return True
