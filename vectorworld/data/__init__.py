"""Real driving logs and training data: readers for WOMD and nuPlan, one Scenario type, tile datasets.

* :mod:`~vectorworld.data.scenario` -- :class:`Scenario` (map + tracks + signals), the common type.
* :mod:`~vectorworld.data.womd` (+ :mod:`tfrecord`, :mod:`crc32c`, :mod:`womd_map`, generated
  :mod:`womd_pb2`) -- Waymo Open Motion TFRecord files, no TensorFlow.
* :mod:`~vectorworld.data.nuplan` (+ :mod:`nuplan_map`, :mod:`geopackage`) -- nuPlan SQLite logs and
  GeoPackage maps, no devkit.
* :mod:`~vectorworld.data.womd_example` (WOMD tf.Example, :mod:`tf_example_pb2`),
  :mod:`~vectorworld.data.gpudrive` (GPUDrive JSON), :mod:`~vectorworld.data.scenarionet` (ScenarioNet
  pickles via :mod:`safe_pickle`; writer in :mod:`scenarionet_writer`) -- lowered to WOMD map features by
  :mod:`assemble`; :mod:`womd_export` feeds the writers.
* :mod:`~vectorworld.data.sources` -- ``KIND:PATH#SELECTOR`` strings for all five formats, ``load_scenario``;
  :mod:`~vectorworld.data.summary` -- ``inspect_scenario``.
* :mod:`~vectorworld.data.tiles` and :mod:`~vectorworld.data.dataset` -- 64 m training tiles, ``.npz``
  shards and a manifest.
"""
