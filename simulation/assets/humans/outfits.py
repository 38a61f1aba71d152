"""What each mannequin wears, as data: its figure, colours, garments and accessories.

:data:`_OUTFITS` maps every body id to an :class:`_Outfit`. An outfit names its materials by
key; they are added to the spec in the order listed, as ``f"{body_id}_{key}"``. Every outfit
has the face keys ``skin``, ``hair``, ``lips``, ``eyes`` and ``eye_white``; the other fields
say which material each part of the figure wears (see
:func:`simulation.assets.humans.geometry._build_mannequin`). Accessories are added after the
figure, in the order listed (see :mod:`simulation.assets.humans.accessories`). Heights in
this table are those of the 1.75 m figure and are scaled with the body's height.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from simulation.assets.humans.anatomy import _FEMALE, _MALE, _Anatomy


@dataclass(frozen=True)
class _Paint:
    """A non-reflective material: an 8-bit colour and its highlights."""

    rgb: tuple[int, int, int]
    specular: float = 0.15
    shininess: float = 0.15


# Accessories: garment details and headwear built on top of the figure. Each field that holds
# a str is a material key of the outfit.


@dataclass(frozen=True)
class _BootShafts:
    """Work-boot shafts covering the ankles."""

    material: str


@dataclass(frozen=True)
class _ReflectiveBands:
    """Reflective bands around the trunk (bottom edges at ``bottoms``) and two strips up over
    the shoulders at the front."""

    material: str
    bottoms: tuple[float, ...]


@dataclass(frozen=True)
class _HardHat:
    """A hard hat: dome, brim and a ridge from front to back."""

    material: str


@dataclass(frozen=True)
class _OpenFront:
    """An open jacket or vest front showing the shirt in a V (see ``_open_front``).

    The V's inner edges run from (+-strip_half, v_bottom) up to (+-top_half, just below the
    top of the flat chest front); below it a strip of half width ``strip_half`` stays open
    down to ``strip_bottom`` (if given).
    """

    shirt: str
    panel: str
    v_bottom: float
    top_half: float
    strip_half: float = 0.0
    strip_bottom: float | None = None
    lapel: str | None = None


@dataclass(frozen=True)
class _Buttons:
    """Buttons down the middle of the front, at ``heights``."""

    material: str
    heights: tuple[float, ...]


@dataclass(frozen=True)
class _JacketCollar:
    """A jacket collar behind the neck."""

    material: str


@dataclass(frozen=True)
class _Tie:
    """A tie on the chest."""

    material: str


@dataclass(frozen=True)
class _Epaulettes:
    """Epaulettes on both shoulders."""

    material: str


@dataclass(frozen=True)
class _Badge:
    """A badge on the left of the chest."""

    material: str


@dataclass(frozen=True)
class _BeltBuckle:
    """A buckle at the front of the belt."""

    material: str


@dataclass(frozen=True)
class _PoliceCap:
    """A peaked police cap: band, crown, visor and badge."""

    band: str  # band and crown
    visor: str
    badge: str


_Accessory = (
    _BootShafts
    | _ReflectiveBands
    | _HardHat
    | _OpenFront
    | _Buttons
    | _JacketCollar
    | _Tie
    | _Epaulettes
    | _Badge
    | _BeltBuckle
    | _PoliceCap
)


@dataclass(frozen=True)
class _Outfit:
    """A dressed figure: its proportions, materials and what each part wears."""

    anatomy: _Anatomy
    paints: Mapping[str, _Paint]  # material key -> material, in the order they are added
    trunk: tuple[tuple[float, float, str], ...]  # (z0, z1, material) from hips to chest top
    trunk_top: str  # chest top and shoulder straps
    shoulder: str  # deltoids
    collar: str
    upper_arm: str
    sleeve: str | None  # short sleeve material (upper arm is then skin) or None
    forearm: str
    thigh: str
    shin: str
    shoe: str
    long_hair: bool
    accessories: tuple[_Accessory, ...] = ()


_OUTFITS: dict[str, _Outfit] = {
    # Construction work clothes: an orange hi-vis vest with silver stripes over a blue shirt,
    # grey trousers, brown work boots and a red hard hat.
    "male_0": _Outfit(
        anatomy=_MALE,
        paints={
            "skin": _Paint((224, 172, 140), specular=0.2, shininess=0.2),
            "shirt": _Paint((40, 70, 130)),
            "vest": _Paint((255, 110, 10), specular=0.25),
            "stripe": _Paint((205, 210, 205), specular=0.5, shininess=0.5),
            "trousers": _Paint((95, 95, 92)),
            "hair": _Paint((70, 48, 30)),
            "lips": _Paint((180, 110, 100)),
            "eyes": _Paint((35, 25, 20), specular=0.5, shininess=0.6),
            "eye_white": _Paint((235, 235, 230)),
            "boots": _Paint((105, 65, 30)),
            "hard_hat": _Paint((205, 25, 25), specular=0.4, shininess=0.5),
        },
        trunk=((0.84, 0.98, "trousers"), (0.98, 1.43, "vest")),
        trunk_top="vest",
        shoulder="shirt",
        collar="shirt",
        upper_arm="shirt",
        sleeve=None,
        forearm="shirt",
        thigh="trousers",
        shin="trousers",
        shoe="boots",
        long_hair=False,
        accessories=(
            _BootShafts("boots"),
            _ReflectiveBands("stripe", bottoms=(1.04, 1.24)),
            _HardHat("hard_hat"),
        ),
    ),
    # An open brown jacket over a grey shirt, dark blue trousers and black shoes.
    "male_1": _Outfit(
        anatomy=_MALE,
        paints={
            "jacket": _Paint((120, 75, 40)),
            "lapel": _Paint((95, 58, 30)),
            "shirt": _Paint((150, 150, 150)),
            "trousers": _Paint((35, 45, 75)),
            "skin": _Paint((170, 120, 90), specular=0.2, shininess=0.2),
            "hair": _Paint((20, 18, 16)),
            "lips": _Paint((130, 75, 65)),
            "eyes": _Paint((25, 18, 14), specular=0.5, shininess=0.6),
            "eye_white": _Paint((235, 235, 230)),
            "shoes": _Paint((22, 22, 22), specular=0.4, shininess=0.5),
            "button": _Paint((40, 28, 18)),
        },
        trunk=((0.84, 0.9, "trousers"), (0.9, 1.43, "jacket")),
        trunk_top="jacket",
        shoulder="jacket",
        collar="shirt",
        upper_arm="jacket",
        sleeve=None,
        forearm="jacket",
        thigh="trousers",
        shin="trousers",
        shoe="shoes",
        long_hair=False,
        accessories=(
            _OpenFront(shirt="shirt", panel="jacket", v_bottom=1.17, top_half=0.06, lapel="lapel"),
            _Buttons("button", heights=(1.05, 1.0)),
            _JacketCollar("jacket"),
        ),
    ),
    # A police uniform: short-sleeved blue shirt, dark tie, black belt, navy trousers, peaked cap.
    "female_0": _Outfit(
        anatomy=_FEMALE,
        paints={
            "shirt": _Paint((70, 115, 190)),
            "navy": _Paint((22, 28, 55)),
            "skin": _Paint((232, 190, 160), specular=0.2, shininess=0.2),
            "belt": _Paint((15, 15, 15), specular=0.4, shininess=0.5),
            "gold": _Paint((220, 175, 50), specular=0.6, shininess=0.6),
            "hair": _Paint((95, 60, 35)),
            "lips": _Paint((190, 90, 95)),
            "eyes": _Paint((40, 30, 25), specular=0.5, shininess=0.6),
            "eye_white": _Paint((235, 235, 230)),
            "shoes": _Paint((18, 18, 18), specular=0.4, shininess=0.5),
        },
        trunk=((0.84, 0.97, "navy"), (0.97, 1.01, "belt"), (1.01, 1.44, "shirt")),
        trunk_top="shirt",
        shoulder="shirt",
        collar="shirt",
        upper_arm="skin",
        sleeve="shirt",
        forearm="skin",
        thigh="navy",
        shin="navy",
        shoe="shoes",
        long_hair=True,
        accessories=(
            _Tie("navy"),
            _Epaulettes("navy"),
            _Badge("gold"),
            _BeltBuckle("gold"),
            _PoliceCap(band="navy", visor="belt", badge="gold"),
        ),
    ),
    # An open purple vest over a green shirt, dark grey trousers and black shoes.
    "female_1": _Outfit(
        anatomy=_FEMALE,
        paints={
            "vest": _Paint((110, 45, 140)),
            "shirt": _Paint((60, 150, 70)),
            "trousers": _Paint((45, 45, 50)),
            "skin": _Paint((150, 100, 70), specular=0.2, shininess=0.2),
            "hair": _Paint((15, 12, 12)),
            "lips": _Paint((140, 70, 70)),
            "eyes": _Paint((20, 15, 12), specular=0.5, shininess=0.6),
            "eye_white": _Paint((235, 235, 230)),
            "shoes": _Paint((20, 20, 20), specular=0.4, shininess=0.5),
        },
        trunk=((0.84, 0.95, "trousers"), (0.95, 1.44, "vest")),
        trunk_top="vest",
        shoulder="shirt",
        collar="shirt",
        upper_arm="shirt",
        sleeve=None,
        forearm="shirt",
        thigh="trousers",
        shin="trousers",
        shoe="shoes",
        long_hair=True,
        accessories=(
            _OpenFront(
                shirt="shirt",
                panel="vest",
                v_bottom=1.22,
                top_half=0.055,
                strip_half=0.018,
                strip_bottom=0.96,
            ),
        ),
    ),
}
"""Body id -> outfit, for every id in ``HUMAN_BODY_IDS``."""
