//! S7's table and chart in `latest.md` too (issue #25 asks for them there): `scale.md`, its
//! headings one level down, between two markers at the end of `latest.md`, after the suite's
//! part (which the book includes by its anchor; the book shows S7 from `scale.md` itself).
//! Whichever of the two is written last embeds the other's current text, so `latest.md` always
//! carries the S7 run beside it, and a later S1–S6 run does not drop it.

use std::path::Path;

const START: &str = "<!-- S7: scale.md, embedded by nsbench -->";
const END: &str = "<!-- /S7 -->";

/// `latest` without any S7 section it had, and with `scale` (a `scale.md`) as its last section.
pub fn with_scale(latest: &str, scale: &str) -> String {
    let own = match (latest.find(START), latest.find(END)) {
        (Some(start), Some(end)) if start < end => {
            format!("{}{}", &latest[..start], &latest[end + END.len()..])
        }
        _ => latest.to_owned(),
    };
    let demoted: Vec<String> = scale
        .lines()
        .map(|line| if line.starts_with('#') { format!("#{line}") } else { line.to_owned() })
        .collect();
    format!(
        "{}\n\n{START}\n\n{}\n\n![S7: cost against table size](scale.svg)\n\n{END}\n",
        own.trim_end(),
        demoted.join("\n").trim_end()
    )
}

/// Embeds `out/scale.md` in `out/latest.md` when both exist; whether it did.
pub fn embed(out: &Path) -> std::io::Result<bool> {
    let (latest, scale) = (out.join("latest.md"), out.join("scale.md"));
    if !latest.exists() || !scale.exists() {
        return Ok(false);
    }
    let text = with_scale(&std::fs::read_to_string(&latest)?, &std::fs::read_to_string(scale)?);
    std::fs::write(latest, text)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCALE: &str = "# Scale benchmark (S7)\n\n## Targets\n\n| a | b |\n";

    #[test]
    fn the_section_is_appended_once_and_replaced_by_a_newer_one() {
        let latest = "# Nameserver benchmark\n\n## Targets (issue #6)\n\nS1 figures\n";
        let once = with_scale(latest, SCALE);
        assert!(once.starts_with(latest.trim_end()), "{once}");
        assert!(once.contains("\n## Scale benchmark (S7)\n"), "headings one level down: {once}");
        assert!(once.contains("\n### Targets\n"));
        assert!(once.contains("](scale.svg)"));
        assert_eq!(with_scale(&once, SCALE), once, "embedding again changes nothing");
        let newer = with_scale(&once, &SCALE.replace("| a |", "| c |"));
        assert_eq!(newer.matches(START).count(), 1);
        assert!(newer.contains("| c |") && !newer.contains("| a |"), "{newer}");
        assert!(newer.contains("S1 figures"), "the S1–S6 text stays");
    }

    #[test]
    fn both_files_are_needed() {
        let dir = tempfile::tempdir().expect("dir");
        assert!(!embed(dir.path()).expect("no files"));
        std::fs::write(dir.path().join("latest.md"), "# N\n").expect("write");
        assert!(!embed(dir.path()).expect("latest only"));
        std::fs::write(dir.path().join("scale.md"), SCALE).expect("write");
        assert!(embed(dir.path()).expect("both"));
        let text = std::fs::read_to_string(dir.path().join("latest.md")).expect("read");
        assert!(text.starts_with("# N\n") && text.contains("## Scale benchmark (S7)"), "{text}");
    }
}
