#include "gui/app/timeline_view.hpp"

#include <QPainter>

#include <algorithm>
#include <set>
#include <utility>

namespace epochcast::gui {

// Low enough that the window's default size leaves the charts above it room for their legends.
TimelineView::TimelineView(QWidget* parent) : QWidget(parent) { setMinimumHeight(100); }

void TimelineView::setTimeline(sim::Timeline timeline) {
    timeline_ = std::move(timeline);
    tracks_.clear();
    end_s_ = 0;
    std::set<std::pair<int, int>> seen;
    for (const sim::TimelineEvent& e : timeline_.events()) {
        end_s_ = std::max(end_s_, e.end_s);
        seen.insert({e.process, e.thread});
    }
    for (const auto& [process, thread] : seen) {
        if (static_cast<int>(tracks_.size()) == kMaxTracks) break;
        QString name = QString::fromStdString(timeline_.name_of(process));
        const QString track = QString::fromStdString(timeline_.name_of(process, thread));
        if (!track.isEmpty()) name += (name.isEmpty() ? "" : " / ") + track;
        tracks_.push_back({process, thread, name.isEmpty() ? QString("%1/%2").arg(process).arg(thread) : name});
    }
    update();
}

void TimelineView::clear() { setTimeline({}); }

void TimelineView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), palette().base());
    if (tracks_.empty() || !(end_s_ > 0)) {
        painter.setPen(palette().text().color());
        painter.drawText(rect(), Qt::AlignCenter, tr("Run the simulation to see its timeline."));
        return;
    }
    const int label_w = 170, axis_h = 20;
    const int row_h = std::max(8, (height() - axis_h) / static_cast<int>(tracks_.size()));
    const double scale = (width() - label_w - 10) / end_s_;
    for (std::size_t i = 0; i < tracks_.size(); ++i) {
        const int y = static_cast<int>(i) * row_h;
        painter.setPen(palette().text().color());
        painter.drawText(QRect(2, y, label_w - 6, row_h), Qt::AlignVCenter | Qt::AlignLeft,
                         painter.fontMetrics().elidedText(tracks_[i].name, Qt::ElideRight, label_w - 6));
        for (const sim::TimelineEvent& e : timeline_.events()) {
            if (e.process != tracks_[i].process || e.thread != tracks_[i].thread) continue;
            const QRectF box(label_w + e.start_s * scale, y + 2, std::max(1.0, (e.end_s - e.start_s) * scale),
                             row_h - 4);
            const bool compute = e.category == "compute";
            const QColor color = compute ? (e.name == "forward" ? QColor(31, 119, 180) : QColor(100, 160, 220))
                                         : QColor(214, 39, 40, 170);
            painter.fillRect(box, color);
        }
    }
    // Time axis in milliseconds: about six ticks.
    painter.setPen(palette().text().color());
    const int axis_y = static_cast<int>(tracks_.size()) * row_h;
    painter.drawLine(label_w, axis_y, width() - 10, axis_y);
    for (int t = 0; t <= 5; ++t) {
        const double at_s = end_s_ * t / 5;
        const int x = label_w + static_cast<int>(at_s * scale);
        painter.drawLine(x, axis_y, x, axis_y + 4);
        painter.drawText(QRect(x - 40, axis_y + 4, 80, axis_h - 4), Qt::AlignHCenter | Qt::AlignTop,
                         QString::number(at_s * 1e3, 'f', 0) + " ms");
    }
}

}  // namespace epochcast::gui
