#pragma once
// TcpTransport lives in collective/transport/process/process_transport.h (it moves bytes over TCP
// or shared memory, per peer). This header remains for code that still includes it by this name.
#include "collective/transport/process/process_transport.h"
