//! A program run as a user runs it, timed from start to exit, with its peak memory.

use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// What one run of a program cost and printed.
pub struct Measured {
    pub seconds: f64,
    /// Peak resident memory in MiB, where the platform reports it.
    pub peak_mib: Option<f64>,
    pub stdout: String,
}

/// Runs `command` to completion, standard output captured; fails with its standard
/// error when it fails.
pub fn run(mut command: Command) -> Result<Measured> {
    let program = format!("{:?}", command.get_program());
    let started = Instant::now();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let (output, peak_mib) = wait(child)?;
    let seconds = started.elapsed().as_secs_f64();
    if !output.status.success() {
        bail!(
            "{program} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(Measured {
        seconds,
        peak_mib,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
    })
}

/// Runs `command` to completion; returns its wall time and standard error (for
/// programs that report on standard error, as `izwi` logs).
pub fn run_with_stderr(mut command: Command) -> Result<(f64, String)> {
    let program = format!("{:?}", command.get_program());
    let started = Instant::now();
    let output = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("running {program}"))?;
    let seconds = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        bail!("{program} failed: {}", stderr.trim());
    }
    Ok((seconds, stderr))
}

/// Waits for `child`, reading its output, and asks the kernel for its peak memory.
#[cfg(unix)]
fn wait(child: std::process::Child) -> Result<(std::process::Output, Option<f64>)> {
    let pid = child.id() as libc::pid_t;
    let mut stdout = child.stdout.context("stdout")?;
    let mut stderr = child.stderr.context("stderr")?;
    // Read both pipes to the end before reaping, so a chatty child never blocks.
    let errors = std::thread::spawn(move || {
        let mut buffer = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut buffer).map(|_| buffer)
    });
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut out)?;
    let err = errors
        .join()
        .map_err(|_| anyhow::anyhow!("reading standard error"))??;
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in; pid is our own child, reaped
    // here once (std's Child is not waited on after this).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if reaped != pid {
        bail!(
            "waiting for process {pid}: {}",
            std::io::Error::last_os_error()
        );
    }
    // ru_maxrss is in KiB on Linux and in bytes on macOS.
    let divisor = if cfg!(target_os = "macos") {
        1024.0 * 1024.0
    } else {
        1024.0
    };
    let output = std::process::Output {
        status: std::os::unix::process::ExitStatusExt::from_raw(status),
        stdout: out,
        stderr: err,
    };
    Ok((output, Some(usage.ru_maxrss as f64 / divisor)))
}

#[cfg(not(unix))]
fn wait(child: std::process::Child) -> Result<(std::process::Output, Option<f64>)> {
    Ok((child.wait_with_output()?, None))
}

/// Runs a reference side (a Python script) to its end and reads the JSON object it
/// prints last; its standard error is the error when it fails.
pub fn reference_json<T: serde::de::DeserializeOwned>(mut command: Command) -> Result<T> {
    let output = command.output().context("running the reference side")?;
    if !output.status.success() {
        bail!(
            "the reference side failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).context("the reference side's JSON")
}
