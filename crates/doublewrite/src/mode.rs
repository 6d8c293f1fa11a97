//! How pages are protected against torn writes: the engine's option ([`DoublewriteMode`]), the
//! evidence about the device ([`AtomicWriteEvidence`]), and [`decide`], the pure function from
//! both to the mode in effect and the reason for it.

use std::fmt;
use std::path::PathBuf;

use crate::format::CopyContent;

/// The torn-write protection asked for (InnoDB: `innodb_doublewrite`, MariaDB:
/// `innodb_use_atomic_writes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DoublewriteMode {
    /// Copies of every page image in the doublewrite file: torn pages are repaired.
    On,
    /// Descriptors only (page id and LSN): a torn page is detected at recovery and named, and
    /// the database refuses to open; one page written per batch instead of the whole batch.
    DetectOnly,
    /// No protection: a torn page is found only by its checksum when read.
    Off,
    /// Untorn writes (`RWF_ATOMIC`) of every page, no doublewrite file. Used only where the
    /// device proves it can; otherwise [`decide`] falls back to `On`.
    AtomicWrites,
    /// `AtomicWrites` where the device supports them, else `On`.
    #[default]
    Auto,
}

/// The protection in effect (what [`decide`] chose).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EffectiveMode {
    /// Doublewrite with page images.
    On,
    /// Doublewrite with descriptors only.
    DetectOnly,
    /// No protection.
    Off,
    /// Untorn writes, no doublewrite file.
    AtomicWrites,
}

impl EffectiveMode {
    /// What the doublewrite file holds in this mode, or `None` when there is no file.
    pub fn copy_content(self) -> Option<CopyContent> {
        match self {
            EffectiveMode::On => Some(CopyContent::Images),
            EffectiveMode::DetectOnly => Some(CopyContent::DescriptorsOnly),
            EffectiveMode::Off | EffectiveMode::AtomicWrites => None,
        }
    }
}

impl fmt::Display for EffectiveMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EffectiveMode::On => "on",
            EffectiveMode::DetectOnly => "detect-only",
            EffectiveMode::Off => "off",
            EffectiveMode::AtomicWrites => "atomic-writes",
        })
    }
}

/// The outcome of the engine's trial untorn write (an `RWF_ATOMIC` O_DIRECT write of one page
/// in the database directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The write succeeded.
    Succeeded,
    /// It failed or was refused; why (e.g. "EOPNOTSUPP: kernel without RWF_ATOMIC").
    Failed(String),
    /// It was not tried.
    NotTried,
}

/// What is known about untorn writes on the database's devices: the input of [`decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtomicWriteEvidence {
    /// The database's page size in bytes.
    pub page_size: u32,
    /// Every data file, with its `atomic_write_unit()` (`None`: statx reports no support).
    pub files: Vec<(PathBuf, Option<u32>)>,
    /// The trial untorn write.
    pub probe: ProbeOutcome,
}

impl AtomicWriteEvidence {
    /// Why untorn page writes cannot be trusted, or `None` when every data file's unit covers
    /// a page and the trial write succeeded.
    pub fn missing_support(&self) -> Option<String> {
        if self.files.is_empty() {
            return Some("no data file to check the atomic-write unit of".to_owned());
        }
        for (path, unit) in &self.files {
            match unit {
                None => {
                    return Some(format!(
                        "no atomic-write support: statx reports none for {}",
                        path.display()
                    ))
                }
                Some(unit) if *unit < self.page_size => {
                    return Some(format!(
                        "the atomic-write unit of {} is {unit} bytes, smaller than the \
                         {}-byte page",
                        path.display(),
                        self.page_size
                    ))
                }
                Some(_) => {}
            }
        }
        match &self.probe {
            ProbeOutcome::Succeeded => None,
            ProbeOutcome::Failed(why) => Some(format!("the trial RWF_ATOMIC write failed: {why}")),
            ProbeOutcome::NotTried => Some("no trial RWF_ATOMIC write was made".to_owned()),
        }
    }
}

/// The protection to use for `requested` given `evidence`, and why, in words for the engine's
/// status. Atomic writes are never assumed: `AtomicWrites` and `Auto` get them only when every
/// data file's atomic-write unit covers a page *and* the trial write succeeded; otherwise
/// `On`, with the reason (a warning when `AtomicWrites` was asked for explicitly).
pub fn decide(
    requested: DoublewriteMode,
    evidence: &AtomicWriteEvidence,
) -> (EffectiveMode, String) {
    match requested {
        DoublewriteMode::On => (EffectiveMode::On, "requested".to_owned()),
        DoublewriteMode::DetectOnly => (EffectiveMode::DetectOnly, "requested".to_owned()),
        DoublewriteMode::Off => (EffectiveMode::Off, "requested".to_owned()),
        DoublewriteMode::AtomicWrites => match evidence.missing_support() {
            None => (
                EffectiveMode::AtomicWrites,
                "requested; every data file supports untorn page writes".to_owned(),
            ),
            Some(why) => (
                EffectiveMode::On,
                format!(
                    "atomic writes were requested but cannot be used ({why}); using doublewrite"
                ),
            ),
        },
        DoublewriteMode::Auto => match evidence.missing_support() {
            None => (
                EffectiveMode::AtomicWrites,
                "auto: every data file supports untorn page writes and a trial write succeeded"
                    .to_owned(),
            ),
            Some(why) => (EffectiveMode::On, format!("auto: {why}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(units: &[Option<u32>], probe: ProbeOutcome) -> AtomicWriteEvidence {
        AtomicWriteEvidence {
            page_size: 16384,
            files: units
                .iter()
                .enumerate()
                .map(|(i, u)| (PathBuf::from(format!("tables/t{i}.ibd")), *u))
                .collect(),
            probe,
        }
    }

    #[test]
    fn auto_uses_atomic_writes_only_with_every_unit_and_the_probe() {
        let good = evidence(&[Some(16384), Some(65536)], ProbeOutcome::Succeeded);
        assert_eq!(
            decide(DoublewriteMode::Auto, &good).0,
            EffectiveMode::AtomicWrites
        );
        assert_eq!(
            decide(DoublewriteMode::AtomicWrites, &good).0,
            EffectiveMode::AtomicWrites
        );

        let (mode, why) = decide(
            DoublewriteMode::Auto,
            &evidence(&[Some(16384), None], ProbeOutcome::Succeeded),
        );
        assert_eq!(mode, EffectiveMode::On);
        assert_eq!(
            why,
            "auto: no atomic-write support: statx reports none for tables/t1.ibd"
        );

        let (mode, why) = decide(
            DoublewriteMode::Auto,
            &evidence(&[Some(4096)], ProbeOutcome::Succeeded),
        );
        assert_eq!(mode, EffectiveMode::On);
        assert!(
            why.contains("4096 bytes, smaller than the 16384-byte page"),
            "{why}"
        );

        let (mode, why) = decide(
            DoublewriteMode::Auto,
            &evidence(
                &[Some(16384)],
                ProbeOutcome::Failed("EOPNOTSUPP".to_owned()),
            ),
        );
        assert_eq!(mode, EffectiveMode::On);
        assert!(
            why.ends_with("trial RWF_ATOMIC write failed: EOPNOTSUPP"),
            "{why}"
        );

        let (mode, _) = decide(
            DoublewriteMode::Auto,
            &evidence(&[Some(16384)], ProbeOutcome::NotTried),
        );
        assert_eq!(mode, EffectiveMode::On);
        let (mode, _) = decide(
            DoublewriteMode::Auto,
            &evidence(&[], ProbeOutcome::Succeeded),
        );
        assert_eq!(mode, EffectiveMode::On);
    }

    #[test]
    fn atomic_writes_requested_without_support_falls_back_to_on_with_a_warning() {
        let (mode, why) = decide(
            DoublewriteMode::AtomicWrites,
            &evidence(&[None], ProbeOutcome::Failed("EINVAL".to_owned())),
        );
        assert_eq!(mode, EffectiveMode::On);
        assert!(
            why.starts_with("atomic writes were requested but cannot be used"),
            "{why}"
        );
    }

    #[test]
    fn explicit_modes_are_kept_whatever_the_device() {
        let none = evidence(&[None], ProbeOutcome::NotTried);
        let good = evidence(&[Some(16384)], ProbeOutcome::Succeeded);
        for ev in [&none, &good] {
            assert_eq!(decide(DoublewriteMode::On, ev).0, EffectiveMode::On);
            assert_eq!(
                decide(DoublewriteMode::DetectOnly, ev).0,
                EffectiveMode::DetectOnly
            );
            assert_eq!(decide(DoublewriteMode::Off, ev).0, EffectiveMode::Off);
        }
        assert_eq!(EffectiveMode::On.copy_content(), Some(CopyContent::Images));
        assert_eq!(
            EffectiveMode::DetectOnly.copy_content(),
            Some(CopyContent::DescriptorsOnly)
        );
        assert_eq!(EffectiveMode::AtomicWrites.copy_content(), None);
        assert_eq!(DoublewriteMode::default(), DoublewriteMode::Auto);
    }
}
