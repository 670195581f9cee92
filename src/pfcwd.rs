//! PFC watchdog (being written)
