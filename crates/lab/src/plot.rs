//! SVG charts with `plotters` (SVG back end only: no font or image libraries needed).

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::LabResult;

/// One named line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `(x, y)` points; points with `y <= 0` are skipped on a log axis.
    pub points: Vec<(f64, f64)>,
}

/// What one panel draws.
#[derive(Clone, Debug)]
pub enum PanelKind {
    /// Lines over a numeric x axis.
    Lines {
        /// The lines.
        series: Vec<Series>,
        /// Logarithmic y axis.
        y_log: bool,
        /// The x values are "nines" (`-log10(1 - q)`) and are labelled as percentiles.
        x_nines: bool,
    },
    /// One bar per label.
    Bars {
        /// `(label, value, colour index)`.
        bars: Vec<(String, f64, usize)>,
    },
}

/// One chart of a figure.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Caption.
    pub title: String,
    /// X axis description.
    pub x_desc: String,
    /// Y axis description.
    pub y_desc: String,
    /// What to draw.
    pub kind: PanelKind,
}

/// Series with at most this many points also get a dot per point (gaps stay visible).
const MARKER_LIMIT: usize = 400;

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 6] = [
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0x2c, 0xa0, 0x2c),
        RGBColor(0xff, 0x7f, 0x0e),
        RGBColor(0x94, 0x67, 0xbd),
        RGBColor(0x8c, 0x56, 0x4b),
    ];
    COLORS.get(i % COLORS.len()).copied().unwrap_or(BLACK)
}

/// Percentile label of a "nines" value: 0 → 0 %, 1 → 90 %, 2 → 99 %, 3 → 99.9 % …
pub fn nines_label(nines: f64) -> String {
    let p = (1.0 - 10f64.powf(-nines)) * 100.0;
    let text = format!("{p:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// "Nines" of a percentile `p` (0–100, below 100).
pub fn nines(p: f64) -> f64 {
    -(1.0 - p / 100.0).max(1e-9).log10()
}

/// Renders `panels` stacked vertically under `title` into an SVG document.
pub fn render(title: &str, panels: &[Panel]) -> LabResult<String> {
    let mut svg = String::new();
    {
        let height = 60 + 380 * panels.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (960, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let root = root
            .titled(title, ("sans-serif", 22))
            .map_err(|e| e.to_string())?;
        let areas = root.split_evenly((panels.len().max(1), 1));
        for (panel, area) in panels.iter().zip(areas.iter()) {
            draw_panel(panel, area)?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

fn draw_panel(panel: &Panel, area: &DrawingArea<SVGBackend<'_>, Shift>) -> LabResult<()> {
    match &panel.kind {
        PanelKind::Lines {
            series,
            y_log,
            x_nines,
        } => draw_lines(panel, area, series, *y_log, *x_nines),
        PanelKind::Bars { bars } => draw_bars(panel, area, bars),
    }
}

fn bounds(series: &[Series], y_log: bool) -> (f64, f64, f64, f64) {
    let points = series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|(_, y)| !y_log || *y > 0.0);
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        return (0.0, 1.0, 0.001, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y_log {
        y0 /= 2.0;
        y1 *= 2.0;
    } else {
        y0 = 0.0;
        y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    }
    (x0, x1, y0, y1)
}

fn draw_lines(
    panel: &Panel,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    series: &[Series],
    y_log: bool,
    x_nines: bool,
) -> LabResult<()> {
    let (x0, x1, y0, y1) = bounds(series, y_log);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.title, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    let x_fmt = |x: &f64| {
        if x_nines {
            nines_label(*x)
        } else {
            format!("{x}")
        }
    };
    let y_fmt = |y: &f64| format!("{y}");
    if y_log {
        let mut chart = builder
            .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(&panel.x_desc)
            .y_desc(&panel.y_desc)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .x_labels(if x_nines { 6 } else { 10 })
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, s) in series.iter().enumerate() {
            let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(|(_, y)| *y > 0.0).collect();
            let c = color(i);
            if pts.len() <= MARKER_LIMIT {
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))
                    .map_err(|e| e.to_string())?;
            }
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(&s.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| e.to_string())?;
    } else {
        let mut chart = builder
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(&panel.x_desc)
            .y_desc(&panel.y_desc)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&|y: &f64| {
                if y1 >= 10.0 {
                    format!("{y:.0}")
                } else {
                    format!("{y:.2}")
                }
            })
            .x_labels(if x_nines { 6 } else { 10 })
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, s) in series.iter().enumerate() {
            let c = color(i);
            if s.points.len() <= MARKER_LIMIT {
                chart
                    .draw_series(s.points.iter().map(|p| Circle::new(*p, 3, c.filled())))
                    .map_err(|e| e.to_string())?;
            }
            chart
                .draw_series(LineSeries::new(s.points.clone(), c.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(&s.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn draw_bars(
    panel: &Panel,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    bars: &[(String, f64, usize)],
) -> LabResult<()> {
    let top = bars.iter().map(|b| b.1).fold(0.0, f64::max);
    let top = if top <= 0.0 { 1.0 } else { top * 1.15 };
    let n = i32::try_from(bars.len()).unwrap_or(i32::MAX).max(1);
    let value_text = |v: f64| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.3}")
        }
    };
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((0..n - 1).into_segmented(), 0f64..top)
        .map_err(|e| e.to_string())?;
    let x_fmt = |x: &SegmentValue<i32>| match x {
        SegmentValue::CenterOf(i) => usize::try_from(*i)
            .ok()
            .and_then(|i| bars.get(i))
            .map(|b| b.0.clone())
            .unwrap_or_default(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc(&panel.x_desc)
        .y_desc(&panel.y_desc)
        .x_label_formatter(&x_fmt)
        .draw()
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(bars.iter().zip(0..).map(|((_, v, c), i)| {
            let mut bar = Rectangle::new(
                [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), *v),
                ],
                color(*c).filled(),
            );
            bar.set_margin(0, 0, 12, 12);
            bar
        }))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(bars.iter().zip(0..).map(|((_, v, _), i)| {
            Text::new(
                value_text(*v),
                (SegmentValue::CenterOf(i), *v + top * 0.02),
                ("sans-serif", 13),
            )
        }))
        .map_err(|e| e.to_string())?;
    Ok(())
}
