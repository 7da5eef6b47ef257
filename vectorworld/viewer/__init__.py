"""The pygame visual debugger: replay a recording, watch a live session, or drive the ego by keyboard.

Layout (one concept per module):
  frame_store  the sequence of :class:`~vectorworld.sim.observation.Frame` and the world map at any step
               (keyframes + cursor, so seeking back is fast), trails, the route
  map_state    lanes and tiles rebuilt from frame deltas; per-lane drawing geometry
  events       per-step event index (collision, off-road, tile generated) and metrics so far
  camera       world <-> screen transform (pan, zoom, follow)
  playback     play/pause, stepping, seeking, speed, layer toggles (pure state, no pygame)
  style        colours and sizes
  map_layers, agent_layers, hud   drawing onto a pygame surface
  map_canvas   off-screen cache of the static map layers
  renderer     composes the layers for one step
  controls     keyboard/mouse -> new UI state
  recording_source, drive_source, live_source   where frames come from; view_session bundles them
  app, headless   the interactive window and the one-shot screenshot

pygame is imported only by the drawing modules, which nothing outside this package imports at module
level; importing ``vectorworld.viewer`` itself does not import pygame.
"""

from __future__ import annotations
