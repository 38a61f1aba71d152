"""The mirrorbench command line: scenes, render, gallery, and its one-line errors."""

import json

import numpy as np
import pytest
from PIL import Image

from evaluation.cli import main


def test_scenes_json_lists_66_scenes_with_their_budgets(capsys):
    assert main(["scenes", "--json"]) == 0
    scenes = json.loads(capsys.readouterr().out)
    assert len(scenes) == 66
    first = scenes[0]
    assert first["id"] == "male_0-mano_white-splash"
    assert {k: first[k] for k in ("track", "body", "hand", "mark", "d0_steps", "max_steps")} == {
        "track": "Human",
        "body": "male_0",
        "hand": "mano_white",
        "mark": "splash",
        "d0_steps": 12,
        "max_steps": 21,
    }


def test_render_writes_a_png_of_the_requested_size(tmp_path):
    out = tmp_path / "frame.png"
    assert (
        main(["render", "--scene", "GR1_T2-allegro-logo_1", "--out", str(out), "--size", "40"]) == 0
    )
    assert Image.open(out).size == (40, 40)


def test_render_offsets_move_the_hand_and_no_mirror_removes_it(tmp_path):
    scene = "male_0-mano_brown-bread"
    paths = {name: tmp_path / f"{name}.png" for name in ("start", "moved", "plain")}
    assert main(["render", "--scene", scene, "--out", str(paths["start"]), "--size", "64"]) == 0
    assert (
        main(
            [
                "render",
                "--scene",
                scene,
                "--out",
                str(paths["moved"]),
                "--size",
                "64",
                "--offset",
                "-2,1,0",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "render",
                "--scene",
                scene,
                "--out",
                str(paths["plain"]),
                "--size",
                "64",
                "--no-mirror",
            ]
        )
        == 0
    )
    images = {k: np.asarray(Image.open(p)) for k, p in paths.items()}
    assert not np.array_equal(images["start"], images["moved"])
    assert not np.array_equal(images["start"], images["plain"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scene", "male_0-nohand-splash"], "valid ids look like"),
        (["--scene", "male_0-mano_white-splash", "--size", "big"], "--size must be an integer"),
        (["--scene", "male_0-mano_white-splash", "--size", "4"], "--size must be an integer"),
        (["--scene", "male_0-mano_white-splash", "--offset", "1,2"], "--offset must be three"),
        (["--scene", "male_0-mano_white-splash", "--offset", "-6,0,0"], "inside the body"),
        (
            ["--scene", "male_0-mano_white-splash", "--offset", "13,0,0"],
            "inside the body or the mirror",
        ),
    ],
)
def test_render_rejects_bad_arguments_on_one_line(tmp_path, capsys, args, message):
    assert main(["render", "--out", str(tmp_path / "x.png"), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x.png").exists()


def test_gallery_writes_one_image_per_scene_and_an_index(tmp_path):
    scenes = "male_1-mano_purple-leaf_0,nova_carter-shadow_hand-logo_0"
    assert main(["gallery", "--out", str(tmp_path), "--size", "32", "--scenes", scenes]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "male_1-mano_purple-leaf_0.png",
        "nova_carter-shadow_hand-logo_0.png",
    ]
    index = (tmp_path / "index.html").read_text()
    assert "male_1-mano_purple-leaf_0.png" in index and "a white wheeled" in index.lower()
