// The simulated timeline (simulator/timeline's events) drawn as one row per track: compute in
// blue, communication in red, simulated time along the bottom.
#pragma once

#include <QWidget>

#include "simulator/timeline.hpp"

namespace epochcast::gui {

class TimelineView : public QWidget {
public:
    explicit TimelineView(QWidget* parent = nullptr);
    /// Show `timeline`; at most kMaxTracks tracks (the first ones: node 0's GPUs, then the rest).
    void setTimeline(sim::Timeline timeline);
    void clear();
    int trackCount() const { return static_cast<int>(tracks_.size()); }
    std::size_t eventCount() const { return timeline_.events().size(); }

    static constexpr int kMaxTracks = 12;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    struct Track {
        int process = 0;
        int thread = 0;
        QString name;
    };
    sim::Timeline timeline_;
    std::vector<Track> tracks_;
    double end_s_ = 0;
};

}  // namespace epochcast::gui
