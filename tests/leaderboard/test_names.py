"""Names that look the same are the same name, through every door (issue 29, item 8).

Model entries (the submission form and API, ``mirrorbench submit`` through that API, hosted
runs' form and API, play's Human entries, the admin) and user names (sign-up) are stored in
their NFKC form and compared on a case-folded key and a TR39 skeleton
(``leaderboard.accounts.names``). Every example is written with escapes: the look-alikes would be
invisible here otherwise.
"""

from __future__ import annotations

import importlib
import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from leaderboard.accounts.names import NameRefused, _prototypes, name_check, name_key, name_skeleton
from leaderboard.boards.entries import model_entry_create, model_entry_upsert
from leaderboard.errors import FieldError
from leaderboard.models import AccountName, ModelEntry, Run, RunSecret, Submission
from leaderboard.play.services import human_run_ensure
from tests.leaderboard.factories import UserFactory, make_bundle
from tests.leaderboard.test_hosted_runs import form_data, public_dns  # noqa: F401 (fixture)

REAL = "GPT-4o-API"
CYRILLIC_O = "GPT-4\u043e-API"  # CYRILLIC SMALL LETTER O
LOWER_CYRILLIC_O = "gpt-4\u043e-api"  # looks like another case of GPT-4o-API
RIGHT_TO_LEFT = "\u202eIPA-o4-TPG"  # shown as GPT-4o-API
ZERO_WIDTH = "GPT-4o\u200b-API"
FULL_WIDTH = "\uff27\uff30\uff34-4o-API"  # FULLWIDTH LATIN CAPITAL LETTERs
COMBINING = "GPT-4o-API\u0301"  # a trailing COMBINING ACUTE ACCENT
HUMAN_CYRILLIC_A = "Hum\u0430n"  # CYRILLIC SMALL LETTER A
ONLY_FORMAT = "\u200b\u2060\ufeff"
ONLY_BLANK = "\u2800\u3164"  # a blank Braille pattern and a Hangul filler

# (name, what the error says): each is refused next to the paper's GPT-4o-API and Human.
LOOK_ALIKES = [
    pytest.param(CYRILLIC_O, f"looks like {REAL!r}", id="cyrillic-o"),
    pytest.param(LOWER_CYRILLIC_O, f"looks like {REAL!r}", id="lower-cyrillic-o"),
    pytest.param(RIGHT_TO_LEFT, "U+202E RIGHT-TO-LEFT OVERRIDE", id="rlo"),
    pytest.param(ZERO_WIDTH, "U+200B ZERO WIDTH SPACE", id="zwsp"),
    pytest.param(FULL_WIDTH, f"{REAL!r} is the name of an entry that is not yours", id="fw"),
    pytest.param(COMBINING, f"looks like {REAL!r}", id="combining"),
    pytest.param(HUMAN_CYRILLIC_A, "looks like 'Human'", id="cyrillic-a"),
    pytest.param(ONLY_FORMAT, "invisible", id="only-format"),
    pytest.param(ONLY_BLANK, "invisible", id="only-blank"),
]


# The rule (leaderboard.accounts.names).


@pytest.mark.parametrize(
    "name", [RIGHT_TO_LEFT, ZERO_WIDTH, ONLY_FORMAT, ONLY_BLANK, "a\tb", "GPT\u200d4o", "x\ufe0f"]
)
def test_invisible_and_control_characters_are_refused(name):
    with pytest.raises(NameRefused, match=r"U\+[0-9A-F]{4}"):
        name_check(name)


@pytest.mark.parametrize("name", ["", "   ", "\u3000 \u00a0"])
def test_a_name_with_no_visible_character_is_refused(name):
    with pytest.raises(NameRefused, match="at least one visible character"):
        name_check(name)


def test_a_leading_combining_mark_and_an_overlong_name_are_refused():
    with pytest.raises(NameRefused, match="starts with a combining mark"):
        name_check("\u0301abc")
    with pytest.raises(NameRefused, match="at most 200 characters"):
        name_check("\ufdfa" * 20)  # one character, 18 once normalised


def test_the_display_form_is_nfkc_with_single_spaces():
    assert name_check(FULL_WIDTH) == REAL
    assert name_check("  My\u00a0 VLM\u3000 7B ") == "My VLM 7B"
    assert name_check("Caf\u0065\u0301") == "Caf\u00e9"  # composed


def test_one_name_whatever_its_case_or_width():
    assert name_key(FULL_WIDTH) == name_key("gpt-4o-api") == name_key(REAL) == "gpt-4o-api"
    assert name_key("GPT-4.1-API") != name_key(REAL)


@pytest.mark.parametrize(
    "alike, real",
    [
        (CYRILLIC_O, REAL),
        (COMBINING, REAL),
        (LOWER_CYRILLIC_O.upper(), REAL),
        (FULL_WIDTH, REAL),
        (HUMAN_CYRILLIC_A, "Human"),
        ("\u0392\u0395R\u03a4", "BERT"),  # Greek capitals
        ("GPT-4o-rnini", "GPT-4o-mini"),
        ("Llama-3.I-8B", "Llama-3.1-8B"),
        ("GPT 4o", "GPT\u00a0 4o"),
    ],
)
def test_look_alikes_share_a_skeleton(alike, real):
    assert name_skeleton(alike) == name_skeleton(real)


def test_a_look_alike_of_another_case_shares_the_folded_skeleton():
    # TR39 maps capital I to l and leaves small i alone: the folded skeleton closes the gap.
    assert name_skeleton(LOWER_CYRILLIC_O) != name_skeleton(REAL)
    assert name_skeleton(LOWER_CYRILLIC_O, folded=True) == name_skeleton(REAL, folded=True)
    assert name_skeleton("\u0392\u0395R\u03a4", folded=True) != name_skeleton("BERT", folded=True)


def test_the_papers_rows_and_the_baselines_look_different():
    paper = Path(__file__).resolve().parents[2] / "fixtures" / "paper_results.json"
    names = [m["name"] for m in json.loads(paper.read_text())["models"]] + ["Oracle"]
    assert len({name_skeleton(n) for n in names}) == len(set(names))
    assert len({name_skeleton(n, folded=True) for n in names}) == len(set(names))
    assert name_skeleton("GPT-4.1-API") != name_skeleton(REAL)
    assert name_skeleton("Qwen2.5-VL-7B") != name_skeleton("Qwen2.5-VL-72B")


def test_the_table_maps_sources_to_prototypes_and_is_idempotent():
    table = _prototypes()
    assert (table["\u043e"], table["\u0430"], table["0"], table["I"], table["m"]) == (
        "o",
        "a",
        "O",
        "l",
        "rn",
    )
    assert "o" not in table and "a" not in table and "l" not in table
    assert not any(c in table for value in table.values() for c in value)


# Model entries, through every door.


@pytest.fixture
def real_entries(db):
    """The paper's GPT-4o-API row and the Human reference: the site's own entries."""
    model_entry_upsert(name=REAL, kind=ModelEntry.Kind.PROPRIETARY)
    model_entry_upsert(name="Human", kind=ModelEntry.Kind.HUMAN)
    return ModelEntry.objects.count()


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def _bundle(content: bytes = b'{"not": "checked: the name is refused first"}\n'):
    upload = io.BytesIO(content)
    upload.name = "results.jsonl"
    return upload


def _nothing_created(entries: int) -> None:
    assert ModelEntry.objects.count() == entries
    assert not Submission.objects.exists() and not Run.objects.exists()
    assert not RunSecret.objects.exists()


@pytest.mark.parametrize("name, says", LOOK_ALIKES)
def test_the_submission_api_refuses_a_look_alike(client, alice, real_entries, name, says):
    client.force_login(alice)
    data = {"model_name": name, "kind": "open-weights", "bundle": _bundle()}
    response = client.post("/api/submissions/", data)
    assert response.status_code == 400, response.content
    assert says in response.json()["model_name"][0]
    _nothing_created(real_entries)


@pytest.mark.parametrize("name, says", LOOK_ALIKES)
def test_the_submission_form_refuses_a_look_alike(client, alice, real_entries, name, says):
    client.force_login(alice)
    data = {"model_name": name, "kind": "open-weights", "bundle": _bundle()}
    response = client.post("/submit/", data)
    assert response.status_code == 400
    assert says in response.context["form"].errors["model_name"][0]
    _nothing_created(real_entries)


@pytest.mark.parametrize("name, says", LOOK_ALIKES)
def test_the_hosted_run_form_refuses_a_look_alike(client, alice, real_entries, name, says):
    client.force_login(alice)
    response = client.post("/evaluate/", form_data(entry_name=name))
    assert response.status_code == 400
    assert says in response.context["form"].errors["entry_name"][0]
    _nothing_created(real_entries)


@pytest.mark.parametrize("name, says", LOOK_ALIKES)
def test_the_hosted_run_api_refuses_a_look_alike(client, alice, real_entries, name, says):
    client.force_login(alice)
    response = client.post(
        "/api/evaluations/", form_data(entry_name=name), content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert says in response.json()["entry_name"][0]
    _nothing_created(real_entries)


def test_the_model_name_is_checked_when_no_leaderboard_name_is_given(client, alice, real_entries):
    client.force_login(alice)
    response = client.post("/evaluate/", form_data(model=CYRILLIC_O))
    assert response.status_code == 400
    assert f"looks like {REAL!r}" in response.context["form"].errors["entry_name"][0]
    _nothing_created(real_entries)


def test_legitimate_names_are_accepted_in_their_display_form(
    client, alice, real_entries, django_capture_on_commit_callbacks, tmp_path
):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=False):
        hosted = client.post("/evaluate/", form_data(entry_name="\uff2d\uff59 VLM\u3000\u30007B"))
    assert hosted.status_code == 302
    assert Run.objects.get().model_entry.name == "My VLM 7B"
    first, second = (
        make_bundle(tmp_path / f"{level}.jsonl", scenes="tienkung-allegro-logo_0", levels=(level,))
        for level in (0, 1)
    )
    data = {"model_name": "GPT-4.1-API", "kind": "proprietary"}
    uploaded = client.post("/api/submissions/", {**data, "bundle": _bundle(first.read_bytes())})
    assert uploaded.status_code == 201, uploaded.content
    # Her own entry, named in another case or width: the same entry.
    again = {"model_name": "\uff47pt-4.1-api", "kind": "proprietary"}
    response = client.post("/api/submissions/", {**again, "bundle": _bundle(second.read_bytes())})
    assert response.status_code == 201, response.content
    assert Submission.objects.filter(run__model_entry__name="GPT-4.1-API").count() == 2
    assert ModelEntry.objects.filter(owner=alice).count() == 2


def test_a_look_alike_of_ones_own_entry_is_refused_too(client, alice, real_entries):
    model_entry_create(name="MyModel", kind="open-weights", owner=alice)
    client.force_login(alice)
    response = client.post("/evaluate/", form_data(entry_name="My\u041codel"))  # Cyrillic EM
    assert response.status_code == 400
    error = response.context["form"].errors["entry_name"][0]
    assert "looks like 'MyModel'" in error and "use that exact name" in error


def test_two_look_alikes_created_at_once_one_is_refused_by_the_database(real_entries, alice):
    # The check before creating passed for both; the unique skeleton refuses the second row.
    with pytest.raises(FieldError) as refused:
        model_entry_create(name=CYRILLIC_O, kind="open-weights", owner=alice, field="model_name")
    assert refused.value.field == "model_name" and "a moment ago" in refused.value.message
    with pytest.raises(IntegrityError), transaction.atomic():
        ModelEntry.objects.create(name=COMBINING, slug="x", kind="open-weights")
    assert ModelEntry.objects.count() == real_entries


def test_the_site_writer_refuses_a_look_alike_and_updates_by_key(real_entries):
    with pytest.raises(ValueError, match=f"looks like {REAL!r}"):
        model_entry_upsert(name=CYRILLIC_O, kind="proprietary")
    entry = model_entry_upsert(name="gpt-4o-api", kind="proprietary", params_b=200)
    assert entry.name == REAL and entry.params_b == 200
    assert ModelEntry.objects.count() == real_entries


def test_import_bundle_refuses_a_look_alike_with_a_message(real_entries, tmp_path):
    bundle = make_bundle(tmp_path / "b.jsonl", scenes="tienkung-allegro-logo_0", levels=(0,))
    with pytest.raises(CommandError, match=f"looks like {REAL!r}.*nothing was imported"):
        call_command("import_bundle", str(bundle), "--model", CYRILLIC_O)
    assert ModelEntry.objects.count() == real_entries and not Run.objects.exists()


def test_a_players_human_entry_steps_aside_from_a_look_alike(db):
    bob, charlie = UserFactory(username="bob"), UserFactory(username="charlie")
    model_entry_create(name="Human (b\u043eb)", kind="human", owner=charlie)  # Cyrillic o
    entry = human_run_ensure(user=bob).model_entry
    assert entry.name == f"Human (bob, {bob.pk})" and entry.owner == bob
    assert human_run_ensure(user=bob).model_entry == entry


def test_the_admin_stores_the_display_form_and_refuses_a_look_alike(client, moderator, db):
    model_entry_upsert(name=REAL, kind="proprietary")
    entry = model_entry_upsert(name="Old name", kind="open-weights")
    client.force_login(moderator)
    url = f"/admin/leaderboard/modelentry/{entry.pk}/change/"
    fields = {"slug": "old-name", "kind": "open-weights", "links": "[]", "description": ""}
    response = client.post(url, {**fields, "name": "\uff2eew\u00a0 name"})
    assert response.status_code == 302
    entry.refresh_from_db()
    assert entry.name == "New name" and entry.name_key == "new name"
    response = client.post(url, {**fields, "name": CYRILLIC_O})
    assert response.status_code == 200
    assert f"looks like {REAL!r}" in response.context["adminform"].form.errors["name"][0]
    entry.refresh_from_db()
    assert entry.name == "New name"


def test_the_migration_keeps_the_older_of_two_stored_look_alikes():
    migration = importlib.import_module("leaderboard.migrations.0016_look_alike_names")
    rows = [(1, REAL), (2, CYRILLIC_O), (3, "gpt-4o-api"), (4, "Other")]
    rows_claimed = list(migration._claim(rows, "entry"))
    claimed = [(row, *(value is not None for value in values)) for row, *values in rows_claimed]
    assert claimed == [
        (1, True, True, True),
        (2, True, False, False),
        (3, False, True, False),  # only a look-alike of another case of the name
        (4, True, True, True),
    ]


# User names, at sign-up.


def _signup(client, username: str):
    password = "mirror-mirror-on-the-wall"
    data = {"username": username, "email": "x@example.org"}
    return client.post("/accounts/signup/", {**data, "password1": password, "password2": password})


@pytest.mark.parametrize(
    "username, says",
    [
        pytest.param("\u0430lice", "looks like 'alice'", id="cyrillic-a"),
        pytest.param("aIice", "looks like 'alice'", id="capital-i"),
        pytest.param("alic\u00e9", "looks like 'alice'", id="accent"),
        pytest.param("\uff41\uff4c\uff49\uff43\uff45", "taken", id="full-width"),
        pytest.param("ALICE", "taken", id="case"),
        pytest.param("ali\u200bce", "letters, digits", id="zwsp"),
        pytest.param("\u202ealice", "letters, digits", id="rlo"),
    ],
)
def test_sign_up_refuses_a_look_alike_user_name(client, alice, username, says):
    response = _signup(client, username)
    assert response.status_code == 400
    assert says in response.context["form"].errors["username"][0]
    assert User.objects.count() == 1


def test_sign_up_stores_the_display_form_and_accounts_made_elsewhere_count(client, db):
    response = _signup(client, "\uff42\uff45\uff54\uff48")
    assert response.status_code == 302
    assert User.objects.get().username == "beth"
    assert AccountName.objects.get().key == "beth"
    # An administrator's account is compared with too (its name recorded when it is saved);
    # an administrator's look-alike is not refused, and keeps no skeleton of its own.
    UserFactory(username="root")
    twin = UserFactory(username="r\u043eot")
    assert AccountName.objects.get(user=twin).skeleton is None
    client.logout()
    refused = _signup(client, "ro\u03bft")  # Greek omicron
    assert refused.status_code == 400
    assert "looks like 'root'" in refused.context["form"].errors["username"][0]
    assert _signup(client, "rooted").status_code == 302
