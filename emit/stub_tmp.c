/* emit/stub_tmp.c — placeholder until the Chakra writer lands (deleted then). */
#include "emit/emit.h"
