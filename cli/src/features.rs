//! Commands behind cargo features: the one line a build without them prints in their place.

use crate::common::Failure;

/// `what` (a command or an output format) needs cargo feature `feature`, which this build
/// left out: a usage failure (exit code 2) that says how to get it.
pub fn left_out(what: &str, feature: &str) -> Failure {
    Failure::usage(format!("{what} is not in this build; install protojit-cli with --features {feature}"))
}
