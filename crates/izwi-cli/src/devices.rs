//! `izwi devices`: the microphones and speakers voice chat can use, with the ids
//! `izwi chat --mic --input-device/--output-device` take.

use anyhow::Result;
use clap::Args;
use izwi_runtime::{input_devices, output_devices, DeviceInfo};

#[derive(Args)]
pub struct DevicesArgs {
    /// Print JSON: {"inputs": [...], "outputs": [...]}.
    #[arg(long)]
    json: bool,
}

pub fn run(args: DevicesArgs) -> Result<()> {
    let (inputs, outputs) = (input_devices()?, output_devices()?);
    if args.json {
        let list = |devices: &[DeviceInfo]| -> Vec<serde_json::Value> {
            devices
                .iter()
                .map(|d| serde_json::json!({"id": d.id, "name": d.name, "default": d.is_default}))
                .collect()
        };
        let json = serde_json::json!({"inputs": list(&inputs), "outputs": list(&outputs)});
        println!("{json}");
        return Ok(());
    }
    for (title, devices) in [("microphones", &inputs), ("speakers", &outputs)] {
        println!("{title}:");
        for d in devices {
            let mark = if d.is_default { " (default)" } else { "" };
            println!("  {}  {}{mark}", d.id, d.name);
        }
    }
    Ok(())
}
