//! The report and compare pages as a reader gets them: what they lead with,
//! and their layout measured in headless Chromium at a desktop and a phone
//! width (no text of a chart on another, none cut off by its chart, nothing
//! wider than the window); `--redact` leaves the identifying strings out.

mod common;

use std::path::Path;

use common::{measured as measure, run_ok, s};

/// Measures every chart's text in the page, in the page's own window:
/// pairs of texts whose boxes overlap, texts that reach past their chart,
/// and whether the page is wider than the window. Written as JSON into
/// `<pre id="layout-result">`.
const CHECK: &str = r##"(function(){
  var out = {overlaps: [], cut: [], overflow: null, texts: 0, width: window.innerWidth};
  var W = window.innerWidth, de = document.documentElement;
  if (de.scrollWidth > W + 1) out.overflow = de.scrollWidth + " > " + W;
  function name(t){ return (t.textContent||"").slice(0,50); }
  document.querySelectorAll("svg.chart").forEach(function(svg, si){
    var sr = svg.getBoundingClientRect();
    var id = (svg.getAttribute("data-chart")||"?") + "#" + si + " " + (svg.getAttribute("aria-label")||"");
    var ts = Array.prototype.slice.call(svg.querySelectorAll("text"))
      .filter(function(t){ return (t.textContent||"").trim() !== ""; });
    var bs = ts.map(function(t){ return t.getBoundingClientRect(); });
    out.texts += ts.length;
    for (var i = 0; i < ts.length; i++) {
      var a = bs[i];
      if (a.width === 0) continue;
      if (a.left < sr.left-1 || a.right > sr.right+1 || a.top < sr.top-1 || a.bottom > sr.bottom+1)
        out.cut.push(id + ": '" + name(ts[i]) + "'");
      for (var j = i+1; j < ts.length; j++) {
        var b = bs[j];
        var w = Math.min(a.right,b.right) - Math.max(a.left,b.left);
        var h = Math.min(a.bottom,b.bottom) - Math.max(a.top,b.top);
        if (w > 1 && h > 1) out.overlaps.push(id + ": '" + name(ts[i]) + "' / '" + name(ts[j]) + "'");
      }
    }
  });
  var pre = document.createElement("pre"); pre.id = "layout-result"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();"##;

/// What [`CHECK`] found.
#[derive(Debug)]
struct Layout {
    width: u64,
    texts: u64,
    overlaps: Vec<String>,
    cut: Vec<String>,
    overflow: Option<String>,
}

/// Lays `page` out `width` CSS pixels wide in headless Chromium and
/// measures it. The page goes into an iframe of that width (Chromium's
/// headless window is at least 500 px wide); its Content-Security-Policy,
/// which forbids every script, is taken out of this copy so the check can run.
fn layout(page: &Path, width: u32, dir: &Path) -> Layout {
    let html = std::fs::read_to_string(page).unwrap();
    let start = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .expect("the page has its CSP");
    let end = start + html[start..].find('>').unwrap() + 1;
    let checked = format!("{}{}", &html[..start], &html[end..])
        .replace("</body>", &format!("<script>{CHECK}</script></body>"));
    let stem = page.file_stem().unwrap().to_string_lossy();
    let inner = dir.join(format!("{stem}-{width}-checked.html"));
    std::fs::write(&inner, checked).unwrap();
    let outer = dir.join(format!("{stem}-{width}-frame.html"));
    std::fs::write(
        &outer,
        format!(
            "<!DOCTYPE html><html><body style=\"margin:0\"><iframe src=\"{}\" \
             style=\"width:{width}px;height:3000px;border:0\" onload=\"var d=this.contentDocument;\
             document.getElementById('r').textContent=d?d.getElementById('layout-result').textContent:'no access'\">\
             </iframe><pre id=\"r\"></pre></body></html>",
            inner.file_name().unwrap().to_string_lossy()
        ),
    )
    .unwrap();
    let c = common::chromium(
        "/usr/bin/chromium",
        &["--allow-file-access-from-files", "--window-size=1280,2000"],
        &format!("file://{}", outer.display()),
    );
    assert!(c.status.success(), "{}", c.stderr);
    let dom = c.dom;
    let at = dom.find("<pre id=\"r\">").expect("the frame page") + "<pre id=\"r\">".len();
    let text = &dom[at..at + dom[at..].find("</pre>").unwrap()];
    let text = text
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: no layout result in {text:?}"));
    let list = |k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    };
    Layout {
        width: v["width"].as_u64().unwrap(),
        texts: v["texts"].as_u64().unwrap(),
        overlaps: list("overlaps"),
        cut: list("cut"),
        overflow: v["overflow"].as_str().map(str::to_string),
    }
}

fn have_chromium() -> bool {
    if Path::new("/usr/bin/chromium").exists() {
        return true;
    }
    // CI installs chromium: there a skip would hide a regression.
    assert!(
        std::env::var_os("CI").is_none(),
        "/usr/bin/chromium is missing with CI set"
    );
    println!("SKIPPED: /usr/bin/chromium is not installed (apt-get install chromium)");
    false
}

/// The report of a cyclic run, a timer sweep's and a comparison: each
/// leads with its answer, and at 1280 and 390 px no chart text lies on
/// another or past its chart, and nothing is wider than the window.
#[test]
fn pages_lead_with_the_answer_and_their_labels_do_not_collide() {
    if !have_chromium() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let cyc = ["cyclic", "-t", "2", "-l", "600", "-i", "500us"];
    let a = measure(dir, "a", &cyc);
    let b = measure(dir, "b", &cyc);
    let t = measure(
        dir,
        "timer",
        &[
            "timer",
            "--delays",
            "400us,1ms",
            "--compensate",
            "none,static,hybrid",
            "--api",
            "clock_nanosleep,nanosleep",
            "-l",
            "20",
            "--calibration-wakes",
            "20",
        ],
    );
    let report = dir.join("report.html");
    run_ok(&["report", s(&a), "-o", s(&report)]);
    let timer = dir.join("timer.html");
    run_ok(&["report", s(&t), "-o", s(&timer)]);
    let cmp = dir.join("compare.html");
    run_ok(&["compare", s(&a), s(&b), "--html", s(&cmp)]);

    // What each page leads with, before any table of the system or plan.
    let page = std::fs::read_to_string(&report).unwrap();
    let answer = page
        .find("<section class=\"answer\">")
        .expect("answer block");
    for fig in ["worst max", "p99", "p99.9", "missed periods"] {
        let at = page
            .find(&format!("<div class=\"flabel\">{fig}</div>"))
            .unwrap_or_else(|| panic!("{fig} not in the answer"));
        assert!(at > answer);
    }
    let details = page.find("<details class=\"meta\">").expect("details");
    assert!(page.find("<table class=\"kv system\">").unwrap() > details);
    assert!(page.find("<table class=\"kv plan\">").unwrap() > details);
    assert!(details > page.find("data-chart=\"histogram\"").unwrap());
    let page = std::fs::read_to_string(&timer).unwrap();
    let concl = page
        .find("<ul class=\"conclusions\">")
        .expect("conclusions");
    let chart = page
        .find("data-chart=\"timer-error\"")
        .expect("timer chart");
    let table = page.find("<details class=\"summary\">").expect("table");
    assert!(concl < chart && chart < table, "conclusions, chart, table");
    assert!(
        page.contains("static compensation: mean |error|") && page.contains("× "),
        "the terminal's conclusions"
    );
    let page = std::fs::read_to_string(&cmp).unwrap();
    let verdict = page.find("<p class=\"verdict").expect("a verdict");
    let differs = page.find("What differs between the runs").unwrap();
    assert!(verdict < differs);
    assert!(
        page.contains("<summary>identical: "),
        "identical fields collapsed"
    );
    assert!(!page.contains("sysdiff"), "no side-by-side system table");

    for p in [&report, &timer, &cmp] {
        for width in [1280, 390] {
            let l = layout(p, width, dir);
            let what = format!("{} at {width} px", p.display());
            assert_eq!(l.width, u64::from(width), "{what}");
            assert!(l.texts > 20, "{what}: {l:?}");
            assert!(
                l.overlaps.is_empty(),
                "{what}: overlapping texts {:#?}",
                l.overlaps
            );
            assert!(l.cut.is_empty(), "{what}: texts cut off {:#?}", l.cut);
            assert_eq!(l.overflow, None, "{what}: wider than the window");
        }
    }

    // Negative control: a chart whose texts collide and run off, and a
    // page wider than the window, are found.
    let bad = dir.join("bad.html");
    let page = std::fs::read_to_string(&report).unwrap().replace(
        "</body>",
        "<svg class=\"chart\" data-chart=\"bad\" viewBox=\"0 0 200 100\" width=\"200\" height=\"100\">\
         <text x=\"10\" y=\"50\">overlapping</text><text x=\"14\" y=\"52\">overlapping</text>\
         <text x=\"190\" y=\"50\">cut off at the right</text></svg>\
         <div style=\"width:2000px\">wide</div></body>",
    );
    std::fs::write(&bad, page).unwrap();
    let l = layout(&bad, 390, dir);
    assert_eq!(l.overlaps.len(), 1, "{l:?}");
    assert_eq!(l.cut.len(), 1, "{l:?}");
    assert!(l.overflow.is_some(), "{l:?}");
}

/// `--redact`: the host name, the kernel command line, a user name in a
/// path and an address are in the page without it and absent with it.
#[test]
fn redact_leaves_identifying_strings_out() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let a = measure(dir, "a", &["cyclic", "-l", "300", "-i", "500us"]);
    let b = measure(dir, "b", &["cyclic", "-l", "300", "-i", "500us"]);
    let secrets = [
        "lab-box-7f3",
        "root=UUID=5ecre7",
        "/home/alice",
        "192.168.77.5",
    ];
    for p in [&a, &b] {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        v["system"]["hostname"] = "lab-box-7f3".into();
        v["system"]["cmdline"] = "root=UUID=5ecre7 ip=192.168.77.5 quiet".into();
        v["command_line"]
            .as_array_mut()
            .unwrap()
            .push("/home/alice/runs/x.json".into());
        v["warnings"]
            .as_array_mut()
            .unwrap()
            .push("lab-box-7f3 talked to 192.168.77.5".into());
        std::fs::write(p, serde_json::to_vec(&v).unwrap()).unwrap();
    }
    let plain = dir.join("plain.html");
    let red = dir.join("red.html");
    run_ok(&["report", s(&a), "-o", s(&plain)]);
    run_ok(&["report", s(&a), "-o", s(&red), "--redact"]);
    let cplain = dir.join("cplain.html");
    let cred = dir.join("cred.html");
    let o = run_ok(&["compare", s(&a), s(&b), "--html", s(&cplain)]);
    let plain_text = o.stdout;
    let o = run_ok(&["compare", s(&a), s(&b), "--html", s(&cred), "--redact"]);
    let red_text = o.stdout;
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    for secret in secrets {
        assert!(read(&plain).contains(secret), "control: {secret}");
        assert!(!read(&red).contains(secret), "report --redact: {secret}");
        assert!(!read(&cred).contains(secret), "compare --redact: {secret}");
        assert!(
            !red_text.contains(secret),
            "compare --redact text: {secret}"
        );
    }
    assert!(read(&cplain).contains("lab-box-7f3"));
    assert!(plain_text.contains("lab-box-7f3"));
    assert!(read(&red).contains("(redacted)"));
    // The figures are the same.
    let figures = |p: &Path| {
        let t = read(p);
        let at = t.find("<section class=\"answer\">").unwrap();
        t[at..at + t[at..].find("</div>\n").unwrap()].to_string()
    };
    assert_eq!(figures(&plain), figures(&red));
}
