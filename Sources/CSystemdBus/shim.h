// sd-bus from libsystemd (Debian: libsystemd-dev). Only LatchkeyDBus includes this.
#include <systemd/sd-bus.h>
