/* greedy/stub_tmp.c — placeholder until the greedy lands (deleted then). */
#include "greedy/greedy.h"
