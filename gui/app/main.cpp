// epochcast-gui: the what-if planner. `--screenshot FILE.png` renders the main window to a file and
// exits (works with QT_QPA_PLATFORM=offscreen). Bad input (a bad --catalog or --calibration file,
// an unwritable screenshot path) gives a message and exit code 2.
#include <QApplication>
#include <QCommandLineParser>
#include <QSaveFile>

#include <cstdio>

#include "gui/app/main_window.hpp"
#include "model/errors.hpp"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName("epochcast-gui");
    QCommandLineParser parser;
    parser.setApplicationDescription("epochcast what-if planner: cost and time of data-parallel ResNet training");
    parser.addHelpOption();
    const QCommandLineOption screenshot("screenshot", "Render the main window to FILE.png and exit.", "FILE.png");
    const QCommandLineOption calibration("calibration", "Calibration: built-in, data-free or a file.", "CAL",
                                         "built-in");
    const QCommandLineOption catalog("catalog", "Extra catalog file (epochcast.catalog/1); repeatable.", "FILE");
    parser.addOptions({screenshot, calibration, catalog});
    parser.process(app);

    epochcast::gui::WindowOptions options;
    options.calibration = parser.value(calibration).toStdString();
    for (const QString& file : parser.values(catalog)) options.catalogs.push_back(file.toStdString());
    try {
        epochcast::gui::MainWindow window(options);
        window.resize(epochcast::gui::kDefaultWidth, epochcast::gui::kDefaultHeight);
        if (!parser.isSet(screenshot)) {
            window.show();
            return app.exec();
        }
        const QString path = parser.value(screenshot);
        window.show();
        QApplication::processEvents();
        QSaveFile file(path);
        if (!path.endsWith(".png", Qt::CaseInsensitive) || !file.open(QIODevice::WriteOnly) ||
            !window.grab().save(&file, "PNG") || !file.commit()) {
            std::fprintf(stderr, "epochcast-gui: cannot write the screenshot to '%s' (a writable .png path)\n",
                         qPrintable(path));
            return 2;
        }
        return 0;
    } catch (const epochcast::InputError& error) {
        std::fprintf(stderr, "epochcast-gui: %s\n", error.what());
        return 2;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "epochcast-gui: %s\n", error.what());
        return 1;
    }
}
