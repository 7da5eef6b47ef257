"""ΔSim, the learned NPC policy: observation features, the network and its folded inference copy, the
k-disks motion vocabulary, logit shaping (kinematics, collisions, routes, junction stop tokens), the
checkpoint format and its shipped weights (``weights/``), and the synthetic scenes its tests drive.

Importing this package imports nothing heavy; the policy registers as ``deltasim`` from
:mod:`policies.deltasim.policy`. Training (corpora, behaviour cloning, the recipe) lives in
:mod:`vectorworld.train`, evaluation against the other NPC policies in :mod:`vectorworld.eval.npc_eval`.
"""
