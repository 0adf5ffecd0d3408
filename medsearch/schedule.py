"""Ready-made schedules for ``medsearch update``: printed, never installed.

NCBI adds one update file a day, published overnight US Eastern time; a run early in
the morning with a random delay finds it, and spreads the mirror's load. Every form
runs the same command (this Python, this data home, ``--quiet``), so the output a
scheduler mails or logs is the digest alone, or nothing when nothing is new.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path
from xml.sax.saxutils import escape

from medsearch.safe_text import xml_text

HOUR = 7
MINUTE = 30


def update_command(home: Path) -> list[str]:
    """The command a scheduler runs: the ``medsearch`` beside this interpreter (or this
    interpreter itself), by absolute path, so the schedule works without the virtual
    environment on a scheduler's PATH."""
    script = Path(sys.executable).with_name("medsearch")
    found = str(script) if script.exists() else shutil.which("medsearch")
    start = (
        [found] if found else [sys.executable, "-P", "-c", "from medsearch.cli import main; main()"]
    )
    return [*start, "--home", str(home.absolute()), "update", "--quiet"]


def timer_text(home: Path) -> str:
    """A systemd user service and timer, a crontab line and a launchd plist."""
    argv = update_command(home)
    line = shlex.join(argv)
    plist_args = "\n".join(f"    <string>{escape(xml_text(a))}</string>" for a in argv)
    log = escape(xml_text(str(home / "update.log")))
    return f"""\
# --- systemd (user): save as ~/.config/systemd/user/medsearch-update.service ---
[Unit]
Description=Apply PubMed's daily update files to the medsearch data home {home}

[Service]
Type=oneshot
ExecStart={line}

# --- and ~/.config/systemd/user/medsearch-update.timer ---
[Unit]
Description=Run medsearch update every morning

[Timer]
OnCalendar=*-*-* {HOUR:02d}:{MINUTE:02d}
RandomizedDelaySec=30min
Persistent=true

[Install]
WantedBy=timers.target

# then: systemctl --user daemon-reload && systemctl --user enable --now medsearch-update.timer

# --- cron: add with `crontab -e` (cron mails the output: the digest, or nothing) ---
{MINUTE} {HOUR} * * * {line}

# --- launchd (macOS): save as ~/Library/LaunchAgents/org.medsearch.update.plist ---
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>org.medsearch.update</string>
  <key>ProgramArguments</key>
  <array>
{plist_args}
  </array>
  <key>StartCalendarInterval</key>
  <dict>
    <key>Hour</key>
    <integer>{HOUR}</integer>
    <key>Minute</key>
    <integer>{MINUTE}</integer>
  </dict>
  <key>StandardOutPath</key>
  <string>{log}.out</string>
</dict>
</plist>
# then: launchctl load ~/Library/LaunchAgents/org.medsearch.update.plist
"""
