"""Real driving logs and training data: readers for WOMD and nuPlan, one Scenario type, tile datasets.

* :mod:`~vectorworld.data.scenario` -- :class:`Scenario` (map + tracks + signals), the common type.
* :mod:`~vectorworld.data.womd` (+ :mod:`tfrecord`, :mod:`crc32c`, :mod:`womd_map`, generated
  :mod:`womd_pb2`) -- Waymo Open Motion TFRecord files, no TensorFlow.
* :mod:`~vectorworld.data.nuplan` (+ :mod:`nuplan_map`, :mod:`geopackage`) -- nuPlan SQLite logs and
  GeoPackage maps, no devkit.
* :mod:`~vectorworld.data.sources` -- ``womd:PATH#INDEX`` / ``nuplan:DB#SCENE`` strings, ``load_scenario``;
  :mod:`~vectorworld.data.summary` -- ``inspect_scenario``.
* :mod:`~vectorworld.data.tiles` and :mod:`~vectorworld.data.dataset` -- 64 m training tiles, ``.npz``
  shards and a manifest.
"""
