"""Vehicle motion shared by the engine and the policies: ego commands and the kinematic dynamics."""
