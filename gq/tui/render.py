"""Pure drawing for `gq top`: the memory-map bar, sparklines and job colours, from numbers.

Nothing here knows about widgets or the app; every function returns a Rich `Text` of an exact
width, so the drawing can be unit-tested without a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.color import Color, blend_rgb
from rich.color_triplet import ColorTriplet
from rich.console import Console, ConsoleOptions, RenderResult
from rich.style import Style
from rich.text import Text

from gq.tui.snapshot import CardView, Slice
from gq.units import format_size

# Distinct on dark and light themes; a job keeps its colour everywhere (map, queue, job screen).
PALETTE = [ColorTriplet(*rgb) for rgb in (
    (86, 156, 214), (214, 157, 86), (106, 190, 120), (197, 112, 192), (220, 200, 90),
    (90, 200, 200), (230, 110, 110), (150, 140, 230), (160, 200, 80), (235, 140, 180),
    (120, 170, 150), (200, 160, 120),
)]
BLACK = ColorTriplet(0, 0, 0)
OUTSIDE = Style(color="rgb(230,90,90)", bgcolor="rgb(70,30,30)")
FREE = Style(color="rgb(90,90,90)")
OVER = Style(color="rgb(255,220,220)", bgcolor="rgb(170,30,30)", bold=True)  # beyond --mem
UNKNOWN = Style(color="rgb(120,120,120)", italic=True)
SPARK = "▁▂▃▄▅▆▇█"


def job_colour(job_id: int) -> ColorTriplet:
    """Consecutive ids get different colours; the same id always the same one."""
    return PALETTE[job_id % len(PALETTE)]


def job_style(job_id: int, *, bold: bool = False) -> Style:
    return Style(color=Color.from_triplet(job_colour(job_id)), bold=bold)


def _slice_styles(job_id: int) -> tuple[Style, Style]:
    """(memory its processes hold, reserved but not held): the second is a darker shade."""
    rgb = job_colour(job_id)
    used = Style(color="black", bgcolor=Color.from_triplet(rgb))
    idle = Style(color="white", bgcolor=Color.from_triplet(blend_rgb(rgb, BLACK, 0.55)))
    return used, idle


def share_cells(sizes: list[int], cells: int) -> list[int]:
    """Split `cells` in proportion to `sizes` (largest remainder), giving every non-zero size
    at least one cell while there are cells to give: a 1 GB job on an 80 GB card stays visible."""
    total = sum(sizes)
    if total <= 0 or cells <= 0:
        return [0] * len(sizes)
    exact = [cells * s / total for s in sizes]
    out = [int(e) for e in exact]
    for i in sorted(range(len(sizes)), key=lambda i: exact[i] - out[i], reverse=True):
        if sum(out) >= cells:
            break
        out[i] += 1
    # Make room for the tiny ones by taking from the largest.
    for i, size in enumerate(sizes):
        if size > 0 and out[i] == 0:
            largest = max(range(len(out)), key=lambda k: out[k])
            if out[largest] > 1:
                out[largest] -= 1
                out[i] = 1
    return out


def _slice_label(s: Slice, width: int) -> str:
    for text in (f" {s.title} {s.user} ", f"{s.title} {s.user}", s.title):
        if len(text) <= width:
            return text
    return s.title[:width]


def memory_bar(card: CardView, width: int) -> Text:
    """The card's memory as `width` cells: a slice per job (what its processes hold in its
    colour, the rest of its reservation darker, labelled with id and user, and what it holds
    beyond its reservation as '!' in red), memory held outside gq (hatched, red), then free
    memory (dots)."""
    slices = sorted(card.slices, key=lambda s: s.job_id)
    outside = card.outside or 0
    free = max(0, card.memory_total - sum(s.size for s in slices) - outside)
    sizes = [s.size for s in slices] + [outside, free]
    cells = share_cells(sizes, width)
    text = Text(no_wrap=True, end="")
    for s, n in zip(slices, cells):
        if n == 0:
            continue
        used_style, idle_style = _slice_styles(s.job_id)
        held = s.reserved if s.used is None else min(s.used, s.reserved)
        over_cells = min(n - 1, max(1, round(n * s.beyond / s.size))) if s.beyond else 0
        within = n - over_cells
        used_cells = within if s.reserved <= 0 else round(within * held / s.reserved)
        label = _slice_label(s, within).ljust(within)
        text.append(label[:used_cells], used_style)
        text.append(label[used_cells:], idle_style)
        if over_cells:
            text.append("!" * over_cells, OVER)
    if cells[-2]:
        label = " outside gq " if cells[-2] >= 12 else ""
        text.append((label + "╱" * cells[-2])[:cells[-2]], OUTSIDE)
    if cells[-1]:
        text.append("·" * cells[-1], FREE)
    if card.memory_total <= 0:
        text.append("?" * width, UNKNOWN)
    text.truncate(width, pad=True)
    return text


def sparkline(values: tuple[float | None, ...] | list[float | None], width: int,
              top: float = 100.0, style: Style | None = None) -> Text:
    """The last `width` values as bars from 0 to `top`, right-aligned; an unknown value is a
    dim '·', never drawn as zero. Coloured by level (utilisation) unless given a style."""
    text = Text(no_wrap=True, end="")
    recent = list(values)[-width:] if width > 0 else []
    text.append(" " * (width - len(recent)))
    for v in recent:
        if v is None:
            text.append("·", UNKNOWN)
        else:
            level = min(len(SPARK) - 1, max(0, int(v / top * (len(SPARK) - 1) + 0.5)))
            text.append(SPARK[level], style or _util_style(v, top))
    return text


def _util_style(value: float, top: float = 100.0) -> Style:
    share = value / top if top else 0
    if share >= 0.6:
        return Style(color="green")
    if share >= 0.2:
        return Style(color="yellow")
    return Style(color="red")


def percent(value: float | None) -> Text:
    """'73%', or 'N/A' (dim) when unknown: never 0."""
    if value is None:
        return Text(" N/A", UNKNOWN)
    return Text(f"{value:3.0f}%", _util_style(value))


def short_name(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3': the vendor says nothing on a GPU monitor."""
    for prefix in ("NVIDIA ", "Tesla ", "GeForce ", "Quadro "):
        name = name.removeprefix(prefix)
    return name


def memory_text(card: CardView) -> Text:
    used = "N/A" if card.memory_used is None else format_size(card.memory_used)
    return Text(f"{used}/{format_size(card.memory_total)}",
                UNKNOWN if card.memory_used is None else "")


@dataclass(frozen=True)
class CardLayout:
    """Column widths of the card lines, the same for every card of every host."""

    name: int
    bar: int  # cells of the largest card's bar
    memory: int = 11
    spark: int = 0

    @classmethod
    def for_width(cls, width: int, name_width: int) -> CardLayout:
        # index(3) name bar memory(11) util(5) spark
        name = min(name_width, max(6, width // 8))
        spark = 0 if width < 70 else min(30, max(8, (width - 60) // 4))
        bar = max(10, width - 3 - (name + 1) - 1 - cls.memory - 5 - (spark + 1 if spark else 0))
        return cls(name=name, bar=bar, spark=spark)


def card_line(card: CardView, layout: CardLayout, largest: int) -> Text:
    """One card: index, model, its bar (as long as its size is to the largest card's),
    memory used, utilisation and its recent history."""
    bar_cells = max(4, round(layout.bar * card.memory_total / largest)) if largest else layout.bar
    line = Text(no_wrap=True)
    line.append(f"{card.index:>2}", "bold")
    # '!': a job on it holds more than its --mem, so the card takes no new slices.
    line.append("!" if card.over_budget else " ", OVER if card.over_budget else "bold")
    line.append(short_name(card.name)[:layout.name].ljust(layout.name) + " ", "dim")
    line.append_text(memory_bar(card, bar_cells))
    line.append(" " * (layout.bar - bar_cells + 1))
    memory = memory_text(card)
    memory.align("right", layout.memory)
    line.append_text(memory)
    line.append(" ")
    line.append_text(percent(card.utilization))
    if layout.spark:
        line.append(" ")
        line.append_text(sparkline(card.history, layout.spark))
    return line


class MemoryMapRenderable:
    """Every card of a host as lines, fitted to the console width it is given."""

    def __init__(self, cards: tuple[CardView, ...], largest: int | None = None):
        self.cards = cards
        self.largest = largest or max((c.memory_total for c in cards), default=0)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        names = max((len(short_name(c.name)) for c in self.cards), default=6)
        layout = CardLayout.for_width(options.max_width, names)
        for card in self.cards:
            yield card_line(card, layout, self.largest)
