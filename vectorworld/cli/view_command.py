"""``vectorworld view``: the pygame debugger (replay a recording, watch a live session, drive the ego).

    vectorworld view RUN.vwrec                                   replay
    vectorworld view RUN.vwrec --screenshot out.png --step 120   one frame to PNG, no display needed
    vectorworld view --connect localhost:50051 --session ID      watch a served session read-only
    vectorworld view --drive --seed 3                            drive the ego with the arrow keys

Bad input (missing / truncated-before-first-step / wrong-version recording, bad --size, unknown session,
unreachable server) prints one line and exits with code 2. pygame is imported only inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from policies import DEFAULT_NPC_POLICY
from vectorworld.cli.groups import GENERATOR_FORMS, SOURCE_FORMS, bad_input, fail
from vectorworld.errors import VectorWorldError

if TYPE_CHECKING:
    from vectorworld.viewer.live_source import LiveSource
    from vectorworld.viewer.playback import ViewOptions
    from vectorworld.viewer.view_session import ViewerSession


def _load_viewer(headless: bool) -> None:
    """Import pygame quietly (dummy SDL drivers when ``headless``); exit code 2 if it is not installed."""
    import os

    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    if headless:
        from vectorworld.viewer.headless import use_dummy_video

        use_dummy_video()
    try:
        import pygame  # noqa: F401
    except ModuleNotFoundError as err:
        raise fail("the debugger needs pygame: pip install 'vectorworld[view]'") from err


def _live_source(connect: str, session: str | None, token: str | None) -> LiveSource:
    from vectorworld.viewer.live_source import LiveSource

    if not session:
        raise fail("--connect needs --session ID (list sessions with the client's list_sessions())")
    if ":" not in connect:
        raise fail(f"--connect must be HOST:PORT, got {connect!r}")
    try:
        import sim_server.client  # noqa: F401
    except ModuleNotFoundError as err:
        raise fail("live viewing is not available: the gRPC client (sim_server.client) is not installed; "
                   "pip install 'vectorworld[serve]'") from err
    source = LiveSource(connect, session, token=token)
    try:
        return source.connect()
    except ConnectionError as err:
        raise fail(str(err)) from err


def register(app: typer.Typer) -> None:
    @app.command()
    def view(
        recording: Path | None = typer.Argument(None, help="A recording written by `rollout --record`."),
        connect: str | None = typer.Option(None, "--connect", help="Watch a live session on HOST:PORT."),
        session: str | None = typer.Option(None, "--session", help="Session id to watch (with --connect)."),
        token: str | None = typer.Option(None, "--token", envvar="VECTORWORLD_TOKEN",
                                         help="Bearer token for --connect."),
        drive: bool = typer.Option(False, "--drive", help="Drive a local session with the arrow keys."),
        seed: int = typer.Option(0, "--seed", help="Seed of the --drive session."),
        generator: str = typer.Option("procedural", "--generator", help=f"Generator for --drive: {GENERATOR_FORMS}."),
        npc: str = typer.Option(DEFAULT_NPC_POLICY, "--npc", help="NPC policy for --drive."),
        km: float = typer.Option(5.0, "--km", help="Target distance of the --drive episode (km)."),
        scenario: str | None = typer.Option(None, "--scenario",
                                            help=f"--drive from a log: {SOURCE_FORMS}."),
        screenshot: Path | None = typer.Option(None, "--screenshot",
                                               help="Render one frame to this PNG and exit (no display)."),
        step: int | None = typer.Option(None, "--step", help="Step to show (clamped to the recording). "
                                        "With --drive --screenshot: steps the built-in planner drives first."),
        size: str = typer.Option("1280x800", "--size", help="Window / screenshot size WxH in pixels."),
        scale: float = typer.Option(6.0, "--scale", help="Initial zoom in pixels per metre."),
        lane_edges: bool = typer.Option(False, "--lane-edges", help="Start with lane-graph edges shown."),
    ) -> None:
        """Visual debugger: replay a recording, watch a live session, or drive the ego by keyboard."""
        from vectorworld.viewer.headless import parse_size

        modes = sum([recording is not None, connect is not None, drive])
        if modes != 1:
            raise fail("give exactly one of RECORDING, --connect HOST:PORT --session ID, or --drive")
        if not 0.2 <= scale <= 80.0:
            raise fail(f"--scale must be within [0.2, 80] px/m, got {scale}")
        if step is not None and step < 0:
            raise fail(f"--step must be >= 0, got {step}")
        try:
            size_px = parse_size(size)
        except VectorWorldError as err:
            raise bad_input(err) from err
        if screenshot is not None:
            from vectorworld.cli.rollout import check_writable

            check_writable("--screenshot", screenshot)
        _load_viewer(headless=screenshot is not None)
        from vectorworld.viewer.playback import ViewOptions

        try:
            view_session = _open(recording, connect, session, token, drive, seed, generator, npc, km,
                                 scenario, screenshot, step)
        except VectorWorldError as err:
            raise bad_input(err) from err
        for warning in view_session.warnings:
            typer.echo(f"warning: {warning}", err=True)
        options = ViewOptions(lane_edges=lane_edges)
        if screenshot is not None:
            from vectorworld.viewer.headless import render_screenshot

            store = view_session.store
            index = store.last_index if step is None or drive else store.index_of_step(step)
            if step is not None and not drive and step > store.frames[-1].step:
                typer.echo(f"note: step {step} is past the end; showing the last step {store.frames[-1].step}",
                           err=True)
            title = view_session.drive.title if view_session.drive else view_session.title
            path = render_screenshot(store, index, screenshot, size_px, scale, options, title, view_session.warnings)
            if view_session.live is not None:
                view_session.live.stop()
            typer.echo(f"wrote {path} (step {store.frames[index].step})")
            return
        if step is not None and not drive:
            view_session.start_index = view_session.store.index_of_step(step)
        _run_window(view_session, size_px, scale, options)


def _run_window(view_session: ViewerSession, size_px: tuple[int, int], scale: float,
                options: ViewOptions) -> None:
    import pygame

    from vectorworld.viewer.app import run_window

    try:
        run_window(view_session, size_px, scale, options)
    except pygame.error as err:
        raise fail(f"cannot open a window ({err}); use --screenshot for headless rendering") from err


def _open(recording: Path | None, connect: str | None, session: str | None, token: str | None, drive: bool,
          seed: int, generator: str, npc: str, km: float, scenario: str | None, screenshot: Path | None,
          step: int | None) -> ViewerSession:
    """The ViewerSession for the chosen mode (raises VectorWorldError / typer.Exit on bad input)."""
    from vectorworld.viewer.view_session import ViewerSession


    if recording is not None:
        from vectorworld.viewer.recording_source import open_recording

        loaded = open_recording(recording)
        return ViewerSession(loaded.store, loaded.title, loaded.warnings)
    if connect is not None:
        from vectorworld.viewer.frame_store import FrameStore

        live = _live_source(connect, session, token)
        store = FrameStore()
        for frame, route in live.drain():
            store.append(frame)
            store.routes[store.last_index] = route
        if screenshot is not None:
            return ViewerSession(store, live.title, [])
        return ViewerSession(store, live.title, [], live=live.start())
    from vectorworld.sim.config import SessionConfig
    from vectorworld.viewer.drive_source import DriveKeys, DriveSource

    config = SessionConfig(seed=seed, target_km=km, generator=generator, npc_policy=npc, scenario=scenario,
                           terminate_on_collision=False, max_steps=10**7).validate()
    source = DriveSource(config)
    if screenshot is not None:
        source.autopilot = True
        for _ in range(step or 0):
            source.step(DriveKeys())
    return ViewerSession(source.store, source.title, [], drive=source)
