//! `jute-fuzz-seed <vectors.txt> <out-dir>`: writes the fuzz seed inputs that
//! `jute::fuzzing::seed_corpus` makes of the conformance vectors, as `<out-dir>/<target>/<n>`.
//! `scripts/seed-fuzz-corpus.sh` runs it and names the files by content hash.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [vectors, out] = &args[..] else {
        eprintln!("usage: jute-fuzz-seed <vectors.txt> <out-dir>");
        return ExitCode::from(2);
    };
    match run(vectors, &PathBuf::from(out)) {
        Ok(count) => {
            eprintln!("{count} seed inputs written to {out}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("jute-fuzz-seed: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(vectors: &str, out: &std::path::Path) -> Result<usize, String> {
    let text = std::fs::read_to_string(vectors).map_err(|e| format!("{vectors}: {e}"))?;
    let seeds = jute::fuzzing::seed_corpus(&text).map_err(|e| format!("{vectors}: {e}"))?;
    for (number, (target, input)) in seeds.iter().enumerate() {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join(number.to_string());
        std::fs::write(&path, input).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(seeds.len())
}
