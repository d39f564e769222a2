#include "input_file.hpp"
