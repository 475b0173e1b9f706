//! Finding the shared public corpus (`../shared/corpus` beside the workspace root): the one lookup of every test, benchmark and example.
//!
//! `benches/support/build.rs` includes this file by path (a build script cannot use a
//! workspace library without making it a build-dependency), so it uses `std` only and
//! takes the workspace root as an argument where it needs one.

use std::path::{Path, PathBuf};

/// The file whose presence marks the shared corpus directory.
const MARKER: &str = "README.md";

/// Where the shared corpus is expected for the workspace at `workspace_root`:
/// `<workspace_root>/../shared/corpus`, whether it exists or not.
pub fn shared_corpus_path_in(workspace_root: &Path) -> PathBuf {
    workspace_root.join("../shared/corpus")
}

/// The shared corpus directory for the workspace at `workspace_root`, canonicalized, if it
/// is there (it holds its `README.md`).
pub fn shared_corpus_dir_in(workspace_root: &Path) -> Option<PathBuf> {
    let dir = shared_corpus_path_in(workspace_root);
    dir.join(MARKER).is_file().then(|| dir.canonicalize().unwrap_or(dir))
}

/// Whether the environment variable `CI` says this is a CI run (`true` or `1`, as CI
/// services set it): there, work that needs the shared corpus must fail without it, not
/// skip.
pub fn in_ci() -> bool {
    is_ci_value(std::env::var("CI").ok().as_deref())
}

fn is_ci_value(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// The shared corpus for `user` (the test or benchmark that needs it), if it is there.
/// When it is not: under `CI=true`, panics with what to do (a CI run must not pass by
/// skipping); otherwise prints `SKIPPED <user>: ...` (shown in the test output) and
/// returns `None`.
pub fn require_shared_corpus_in(workspace_root: &Path, user: &str) -> Option<PathBuf> {
    require(workspace_root, user, in_ci())
}

fn require(workspace_root: &Path, user: &str, ci: bool) -> Option<PathBuf> {
    if let Some(dir) = shared_corpus_dir_in(workspace_root) {
        return Some(dir);
    }
    let path = shared_corpus_path_in(workspace_root);
    if ci {
        panic!(
            "{user}: the shared corpus is not at {} ({MARKER} missing) and CI=true, where tests that need it \
             must not skip; put the corpus there (see README) or run without CI=true",
            path.display()
        );
    }
    println!("SKIPPED {user}: shared corpus not found at {} (see README)", path.display());
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace root `<tmp>/ws` beside `<tmp>/shared/corpus` (with its README when
    /// `with_corpus`); all of `<tmp>` is removed when it is dropped, also by a panic.
    struct Workspace {
        base: PathBuf,
        root: PathBuf,
    }

    impl Drop for Workspace {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.base);
        }
    }

    fn workspace(tag: &str, with_corpus: bool) -> Workspace {
        let base = std::env::temp_dir().join(format!("protojit-corpus-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("ws")).unwrap();
        if with_corpus {
            std::fs::create_dir_all(base.join("shared/corpus")).unwrap();
            std::fs::write(base.join("shared/corpus").join(MARKER), "corpus").unwrap();
        }
        Workspace { root: base.join("ws"), base }
    }

    #[test]
    fn present_corpus_is_found_with_or_without_ci() {
        let ws = workspace("present", true);
        let want = ws.root.join("../shared/corpus").canonicalize().unwrap();
        assert_eq!(shared_corpus_dir_in(&ws.root), Some(want.clone()));
        assert_eq!(require(&ws.root, "t", false), Some(want.clone()));
        assert_eq!(require(&ws.root, "t", true), Some(want));
    }

    #[test]
    fn absent_corpus_is_a_skip_outside_ci() {
        let ws = workspace("absent", false);
        assert_eq!(shared_corpus_dir_in(&ws.root), None);
        assert_eq!(require(&ws.root, "t", false), None);
    }

    #[test]
    #[should_panic(expected = "the_test: the shared corpus is not at")]
    fn absent_corpus_fails_under_ci() {
        let ws = workspace("absent-ci", false);
        require(&ws.root, "the_test", true);
    }

    #[test]
    fn ci_values() {
        for (value, ci) in [(None, false), (Some(""), false), (Some("false"), false), (Some("0"), false)] {
            assert_eq!(is_ci_value(value), ci, "{value:?}");
        }
        for value in ["true", "TRUE", "True", "1"] {
            assert!(is_ci_value(Some(value)), "{value}");
        }
    }
}
