//! The HTML report's files: [`Report::write_html`] for a run just made, [`write_comparison`]
//! for saved `--json` reports side by side. Labels are file names; the page itself is
//! [`render`]'s, built without I/O.

use std::path::{Path, PathBuf};

use crate::error::LoadtestError;
use crate::report::Report;

use super::page::{Run, render};

impl Report {
    /// Write this run's page to `path`, labelled by the file's name.
    pub fn write_html(&self, path: &Path) -> Result<(), LoadtestError> {
        let label = label(path);
        write(path, &render(&[Run { label: &label, report: self }]))
    }
}

/// Read the `--json` reports `files` and write them side by side to `out`, each labelled by
/// its file name (`report A.json B.json --html OUT`).
pub fn write_comparison(files: &[PathBuf], out: &Path) -> Result<(), LoadtestError> {
    let reports = files.iter().map(|f| Report::read_json(f)).collect::<Result<Vec<_>, _>>()?;
    let labels: Vec<String> = files.iter().map(|f| label(f)).collect();
    let runs: Vec<Run<'_>> = labels.iter().zip(&reports).map(|(label, report)| Run { label, report }).collect();
    write(out, &render(&runs))
}

/// A file's name without its extension (`runs/before.json` → `before`).
fn label(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

fn write(path: &Path, page: &str) -> Result<(), LoadtestError> {
    std::fs::write(path, page).map_err(LoadtestError::io(format!("writing {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report saved before the JSON carried histograms and a timeline.
    const OLDER: &str = include_str!("../../runs/2026-12-01/node-100k-h2c-steady.json");

    #[test]
    fn an_older_report_still_renders_its_figures_with_a_note_for_each_chart() {
        let report: Report = serde_json::from_str(OLDER).expect("an older report parses");
        let page = render(&[Run { label: "older", report: &report }]);
        assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
        assert!(page.contains(&format!("{} of {}", report.phases.open.opened, report.phases.open.streams)));
        assert!(!page.contains("<svg"), "no histogram, no timeline: nothing to draw");
        assert_eq!(page.matches("No data for this chart").count(), 3);
    }
}
