#include "output_files.hpp"
