"""The replay file (evaluation.replay_html) and `mirrorbench replay-html`: one episode in one
HTML file, every frame inside, nothing fetched, every response shown as text."""

from __future__ import annotations

import base64
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from evaluation.bundle import read_bundle
from evaluation.cli import main
from evaluation.replay_html import (
    ReplayEpisode,
    answer_says,
    episode_views,
    replay_html,
    step_view,
)

SCENE = "male_0-mano_white-splash"
SIZE = 32
HOSTILE = [
    "<script>document.title = 'pwned'</script> Backward. Choice: [6]",
    "</script><img src=x onerror=\"document.title='pwned'\"> Up. Choice: [1]",
    "Left & right: <b>bold</b>? Choice: [3]",
]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """A scripted agent's episode at level 1, 32-pixel frames, whose answers hold markup."""
    folder = tmp_path_factory.mktemp("replay-html")
    script = folder / "hostile.json"
    script.write_text(json.dumps(HOSTILE))
    out = folder / "hostile.jsonl"
    args = ["run", "--agent", f"scripted:{script}", "--scenes", SCENE, "--levels", "1"]
    assert main([*args, "--image-size", str(SIZE), "--no-cache", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def exported(bundle, tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("replay-out") / "replay.html"
    assert main(["replay-html", str(bundle), "--episode", f"{SCENE}:1", "--out", str(out)]) == 0
    return out.read_text(encoding="utf-8")


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.attributes: list[tuple[str, str, str]] = []
        self.scripts: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attributes += [(tag, name, value or "") for name, value in attrs]
        if tag == "script":
            self.scripts.append(dict(attrs))


def _data(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', html)
    assert found, "the replay's data is missing"
    return json.loads(found.group(1))


def test_every_view_is_inlined_as_webp_at_the_bundles_size(bundle, exported):
    record = read_bundle(bundle).episodes[0]
    views = _data(exported)["views"]
    assert len(views) == len(record["steps"]) + 1
    for view in views:
        prefix = "data:image/webp;base64,"
        assert view["frame"].startswith(prefix)
        image = Image.open(io.BytesIO(base64.b64decode(view["frame"][len(prefix) :])))
        assert image.format == "WEBP" and image.size == (SIZE, SIZE)
    assert [v["distance"] for v in views] == record["distances"]
    assert [v["cell"] for v in views[1:]] == [s["hand_cell"] for s in record["steps"]]


def test_nothing_in_the_file_points_to_a_server(exported):
    tags = _Tags()
    tags.feed(exported)
    for tag, name, value in tags.attributes:
        assert name not in ("href", "action", "srcset", "poster", "data"), (tag, name, value)
        if name == "src":
            assert value.startswith("data:image/webp;base64,"), (tag, value[:40])
    # Both scripts are inline: the data and the viewer.
    assert len(tags.scripts) == 2 and not any("src" in s for s in tags.scripts)
    assert not re.search(r"https?:|//[a-z0-9.-]+\.[a-z]{2,}/|url\(|@import", exported)
    assert "default-src 'none'" in exported.replace("&#x27;", "'")


def test_a_response_holding_markup_is_data_never_markup(exported):
    steps = [view["step"] for view in _data(exported)["views"] if view["step"]]
    assert [s["response"] for s in steps[:3]] == HOSTILE
    assert "<script>document" not in exported
    assert "<img src=x" not in exported
    assert "<b>bold" not in exported
    assert exported.count("</script>") == 2  # the two real ones
    assert steps[0]["option"] == 6 and steps[0]["option_text"]


def test_the_file_says_who_played_where_and_the_outcome(exported):
    assert f"scripted in <code>{SCENE}</code>, level 1" in exported
    assert "after " in exported and "hostile.jsonl" in exported
    assert "does not look at images" in exported  # a script reads no image
    assert 'max="' in exported and 'data-field="slider"' in exported


def test_the_writer_needs_one_frame_per_view():
    views = episode_views([], [9])
    episode = ReplayEpisode("someone", SCENE, 0, "completed", False)
    with pytest.raises(ValueError, match="one frame per view"):
        replay_html(episode=episode, views=views, frames=[])


def test_an_episode_the_bundle_lacks_is_refused_naming_what_it_holds(bundle, tmp_path, capsys):
    out = tmp_path / "r.html"
    args = ["replay-html", str(bundle), "--out", str(out), "--episode"]
    assert main([*args, f"{SCENE}:3"]) == 2
    err = capsys.readouterr().err
    assert f"no episode {SCENE}:3" in err and f"it holds {SCENE}:1" in err
    assert main([*args, SCENE]) == 2
    assert "--episode must be SCENE:LEVEL" in capsys.readouterr().err
    assert not out.exists()


def test_a_control_bundles_replay_shows_its_conditions_views(tmp_path):
    scene = "male_1-mano_brown-leaf_0"
    out = tmp_path / "moved.jsonl"
    args = ["run", "--agent", "chest", "--scenes", scene, "--levels", "1", "--condition"]
    assert main([*args, "moved-mark", "--image-size", str(SIZE), "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    header = json.loads(lines[0])
    del header["condition"]
    as_main = tmp_path / "as-main.jsonl"
    as_main.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    frames = []
    for bundle in (out, as_main):
        html = tmp_path / f"{bundle.stem}.html"
        assert (
            main(["replay-html", str(bundle), "--episode", f"{scene}:1", "--out", str(html)]) == 0
        )
        frames.append(_data(html.read_text(encoding="utf-8"))["views"][0]["frame"])
    # The start view under moved-mark shows the mark at its other place in the mirror.
    assert frames[0] != frames[1]


def test_each_step_says_when_its_answer_names_the_mirror_or_contradicts_itself():
    assert answer_says("Thought: my reflection in the mirror; move up.\nChoice: [2]", 2) == (
        "names the mirror; calls the reflection its own; contradicts itself: its reasoning "
        "says move up, its choice is 2"
    )
    assert answer_says("Thought: move up.\nChoice: [1]", 1) == ""
    view = step_view({"index": 0, "response": "A mirror.\nChoice: [6]", "option": 6})
    assert view["says"] == "names the mirror"
