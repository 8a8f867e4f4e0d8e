//! fdsr visualizer shell (native): an eframe window that runs the codec's smoke compression on the
//! GPU and shows what it measured. The live training panels come with the visualizer issue.

use eframe::egui;

fn main() -> eframe::Result<()> {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default().with_inner_size([640.0, 360.0]),
        ..Default::default()
    };
    eframe::run_native("fdsr", options, Box::new(|_cc| Ok(Box::new(App::default()))))
}

/// Application state: the last smoke result or error.
#[derive(Default)]
struct App {
    result: Option<Result<fdsr::bench::smoke::SmokeResult, String>>,
}

impl App {
    fn run_smoke(&mut self) {
        let run = async {
            let ctx = fdsr::GpuContext::new().await?;
            fdsr::bench::smoke::run(&ctx, 0).await
        };
        self.result = Some(pollster::block_on(run).map_err(|e| e.to_string()));
    }
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        ui.vertical(|ui| {
            ui.heading("fdsr — activation compression on any GPU");
            ui.label("Block DCT, bits per frequency band, sparsification; WGSL on wgpu.");
            if ui.button("Compress a generated activation (fdsr:budget=2)").clicked() {
                self.run_smoke();
            }
            match &self.result {
                Some(Ok(r)) => {
                    ui.label(format!("adapter: {}", r.adapter));
                    ui.label(format!("stored as {}: {} bytes, ratio {:.2}x", r.policy, r.stored_bytes, r.ratio));
                    ui.label(format!("relative L2 error: {:.4}", r.rel_l2));
                }
                Some(Err(e)) => {
                    ui.colored_label(egui::Color32::RED, e);
                }
                None => {}
            }
        });
    }
}
