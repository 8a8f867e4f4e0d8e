//! The browser entry: the app on a canvas at once, then the WebGPU training device and the
//! Fashion-MNIST subset from the bundle's static files (`data/`), with the settings in the URL
//! hash (read at start, written on every reset).

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::{data, timeline, App, Run, RunSlot, Settings};

/// The bundle's subset files, in [`data::from_idx`]'s order.
const FILES: [&str; 4] =
    ["data/train-images.idx", "data/train-labels.idx", "data/test-images.idx", "data/test-labels.idx"];

thread_local! {
    /// The page's runner, kept for the page's lifetime.
    static RUNNER: RefCell<Option<eframe::WebRunner>> = const { RefCell::new(None) };
}

fn js_err(e: JsValue) -> String {
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}

/// Starts the visualizer on the canvas with id `canvas_id`.
pub async fn start(canvas_id: &str) -> Result<(), JsValue> {
    // eframe's and wgpu's warnings go to the browser console (a second start keeps the first).
    let _ = eframe::WebLogger::init(log::LevelFilter::Info);
    let window = web_sys::window().ok_or("no window")?;
    let canvas = window
        .document()
        .and_then(|d| d.get_element_by_id(canvas_id))
        .ok_or_else(|| format!("no element with id '{canvas_id}'"))?
        .dyn_into::<web_sys::HtmlCanvasElement>()
        .map_err(|_| format!("'{canvas_id}' is not a canvas"))?;
    let hash = window.location().hash().unwrap_or_default();
    let (settings, notices) = Settings::from_query(hash.trim_start_matches('#'));
    let slot: RunSlot = Rc::new(RefCell::new(None));
    let app = App::new(slot.clone(), settings.clone(), notices).on_settings(|s| {
        if let Some(w) = web_sys::window() {
            // A page that refuses a new hash keeps the old one; the run is not affected.
            let _ = w.location().set_hash(&s.to_query());
        }
    });
    // The training device and the data come while the renderer starts; the first frame after
    // them (asked for at once, once the renderer is there) starts the first step.
    let ui: Rc<RefCell<Option<egui::Context>>> = Rc::default();
    let ui_made = ui.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let made = make_run(settings).await;
        *slot.borrow_mut() = Some(made);
        if let Some(ctx) = &*ui.borrow() {
            ctx.request_repaint();
        }
    });
    let runner = eframe::WebRunner::new();
    let make_app = Box::new(move |cc: &eframe::CreationContext<'_>| {
        *ui_made.borrow_mut() = Some(cc.egui_ctx.clone());
        Ok(Box::new(app) as Box<dyn eframe::App>)
    });
    runner.start(canvas, eframe::WebOptions::default(), make_app).await?;
    RUNNER.with(|r| *r.borrow_mut() = Some(runner));
    timeline::mark("renderer started");
    Ok(())
}

/// The training device and the data (synthetic images, named as such, when the bundle has none).
async fn make_run(settings: Settings) -> Result<Run, String> {
    // One GEMM tile height: the first step builds every pipeline it uses, which the browser's
    // software adapter compiles for seconds each, and a fixed height builds each product's
    // pipeline once instead of once per height (4 instead of 6 for `tiny`); 64, the squarest
    // tile, compiles fastest there (16 the slowest) at the price of padding the small models'
    // products (BENCHMARKS.md, issue 21). Compact kernels where there are two: the encoder's
    // unrolled pack alone compiled for 2.5 s there.
    let opts = fdsr::gpu::ContextOptions { tile_rows: Some(64), compact_shaders: true, ..Default::default() };
    let ctx = fdsr::GpuContext::with_options(opts).await.map_err(|e| format!("no WebGPU training device: {e}"))?;
    timeline::mark("training device ready");
    let data = match fetch_subset().await {
        Ok(d) => d,
        Err(e) => {
            let mut d = data::synthetic(data::TRAIN, data::TEST);
            d.source = format!("synthetic images ({e}; `bash web/build.sh` writes the subset)");
            d
        }
    };
    timeline::mark("data loaded");
    Ok(Run::new(ctx, data, settings))
}

async fn fetch_subset() -> Result<crate::Data, String> {
    let mut files = Vec::with_capacity(FILES.len());
    for url in FILES {
        files.push(fetch(url).await?);
    }
    let source = format!("Fashion-MNIST subset, {} + {} images", data::TRAIN, data::TEST);
    data::from_idx([&files[0], &files[1], &files[2], &files[3]], &source).map_err(|e| e.to_string())
}

async fn fetch(url: &str) -> Result<Vec<u8>, String> {
    let window = web_sys::window().ok_or("no window")?;
    let resp: web_sys::Response =
        JsFuture::from(window.fetch_with_str(url)).await.map_err(js_err)?.dyn_into().map_err(js_err)?;
    if !resp.ok() {
        return Err(format!("{url}: HTTP {}", resp.status()));
    }
    let buf = JsFuture::from(resp.array_buffer().map_err(js_err)?).await.map_err(js_err)?;
    Ok(js_sys::Uint8Array::new(&buf).to_vec())
}
